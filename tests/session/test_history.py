"""Specs of a session read back as a conversation and as the history runs are shown."""

from __future__ import annotations

from conclave.actors.run.termination import Termination
from conclave.actors.run.turn import Turn
from conclave.actors.session.entries import (
    AssistantReply,
    Compacted,
    CompactionTrigger,
    ModeChanged,
    RunRecorded,
    SessionEntry,
    UserTurn,
)
from conclave.actors.session.history import SUMMARY_QUESTION, read_conversation
from conclave.config.modes import ModeSource, ModeState
from conclave.config.schema.modes import CollaborationMode


def _run(turn_id: int, answer: str | None, *, id: int) -> RunRecorded:
    return RunRecorded(
        id=id,
        turn_id=turn_id,
        run_id=f"run{turn_id}",
        log_dir=None,
        termination=Termination.COMPLETED if answer else Termination.FAILED,
        winner="a" if answer else None,
        final_answer=answer,
        input_tokens=100 * turn_id,
    )


ENTRIES: tuple[SessionEntry, ...] = (
    UserTurn(id=1, text="q1"),
    _run(1, "a1", id=2),
    UserTurn(id=3, text="q2"),
    AssistantReply(id=4, turn_id=3, text="a2", input_tokens=None),
    UserTurn(id=5, text="q3"),
    _run(5, None, id=6),
)


def test_history_holds_each_answered_turn_in_order() -> None:
    history = read_conversation(ENTRIES).history()
    assert history == (
        Turn(task="q1", final_answer="a1", winner="a", run_id="run1"),
        Turn(task="q2", final_answer="a2"),
    )


def test_a_turn_without_an_answer_is_an_exchange_but_not_history() -> None:
    conversation = read_conversation(ENTRIES)
    assert len(conversation.exchanges) == 3
    assert conversation.exchanges[2].answer is None


def test_the_last_mode_change_is_the_mode_to_restore() -> None:
    plan = ModeState(collaboration=CollaborationMode.PLAN)
    entries = (
        ModeChanged.of(ModeState(), ModeSource.FLAG),
        ModeChanged.of(plan, ModeSource.SHORTCUT),
    )
    mode = read_conversation(entries).mode
    assert mode is not None and mode.state == plan


def test_after_a_compaction_history_is_the_summary_then_the_kept_turns_verbatim() -> None:
    compacted = Compacted(
        id=7,
        summary="we discussed q1",
        first_kept_id=3,
        tokens_before=100,
        tokens_after=40,
        trigger=CompactionTrigger.MANUAL,
    )
    history = read_conversation((*ENTRIES, compacted)).history()
    assert history == (
        Turn(task=SUMMARY_QUESTION, final_answer="we discussed q1"),
        Turn(task="q2", final_answer="a2"),
    )


def test_an_answer_whose_turn_was_skipped_is_left_out() -> None:
    assert read_conversation((_run(99, "orphan", id=1),)).exchanges == ()


def test_the_last_answers_input_tokens_are_what_automatic_compaction_compares() -> None:
    assert read_conversation(ENTRIES).last_input_tokens == 500
    assert read_conversation(ENTRIES[:4]).last_input_tokens is None


def test_a_compaction_forgets_the_input_tokens_of_the_prompt_it_shortened() -> None:
    compacted = Compacted(
        id=7,
        summary="s",
        first_kept_id=3,
        tokens_before=100,
        tokens_after=40,
        trigger=CompactionTrigger.AUTOMATIC,
    )
    assert read_conversation((*ENTRIES, compacted)).last_input_tokens is None
