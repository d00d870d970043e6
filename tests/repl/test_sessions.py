"""The REPL's session: turns, runs and mode changes recorded with who made them; a resumed
session's history and modes restored with a one-line notice; ``/compact`` and automatic
compaction; ``/resume``'s picker; ``/clear`` starting a new session."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conclave.actors.run.termination import Termination
from conclave.actors.session.compaction import CompactionPolicy
from conclave.actors.session.entries import (
    Compacted,
    CompactionTrigger,
    ModeChanged,
    PlanDecided,
    PlanDecision,
    PlanProposed,
    RunRecorded,
    SessionEntry,
    UserTurn,
)
from conclave.actors.session.history import SUMMARY_QUESTION
from conclave.actors.session.store import open_session, read_session
from conclave.config.modes import AgentMode, ModeSource, ModeState
from conclave.config.resolver import RunFlags
from conclave.config.schema.modes import CollaborationMode
from conclave.ui.repl.session_commands import SessionStart
from conclave.ui.repl.state import Dialog
from tests.repl.harness import ALT_R, ENTER, SHIFT_TAB, Session, play


def _start(tmp_path: Path, **how: object) -> SessionStart:
    return SessionStart(root=tmp_path / "sessions", **how)  # type: ignore[arg-type]


def _entries(tmp_path: Path) -> list[tuple[str, tuple[SessionEntry, ...]]]:
    return [
        (p.parent.name, read_session(p).entries)
        for p in sorted((tmp_path / "sessions").glob("*/session.jsonl"))
    ]


def _earlier_session(tmp_path: Path, modes: ModeState) -> str:
    """A session left by an earlier REPL: one answered turn, then a mode change."""
    with open_session(tmp_path / "sessions") as session:
        session.append(ModeChanged.of(ModeState(), ModeSource.FLAG))
        turn = session.append(UserTurn(text="an earlier question"))
        session.append(
            RunRecorded(
                turn_id=turn.id,
                run_id="r1",
                log_dir=None,
                termination=Termination.COMPLETED,
                winner="agent-1",
                final_answer="an earlier answer",
                input_tokens=100,
            )
        )
        session.append(ModeChanged.of(modes, ModeSource.SHORTCUT))
    return session.id


def test_turns_runs_and_mode_changes_are_recorded_with_their_source(tmp_path: Path) -> None:
    async def scenario(s: Session) -> None:
        await s.result_of("first question")
        s.press(ALT_R)
        await s.until(lambda: not s.state.modes.refinement, "refinement off")
        s.type("/mode plan")
        await s.until(lambda: s.state.plan_mode, "plan mode")

    state = play(scenario, tmp_path, session_start=_start(tmp_path))
    [(session_id, entries)] = _entries(tmp_path)
    assert state.session_id == session_id
    changes = [e for e in entries if isinstance(e, ModeChanged)]
    assert [c.source for c in changes] == [ModeSource.FLAG, ModeSource.SHORTCUT, ModeSource.COMMAND]
    assert changes[-1].state == ModeState(collaboration=CollaborationMode.PLAN, refinement=False)
    [turn] = [e for e in entries if isinstance(e, UserTurn)]
    [run] = [e for e in entries if isinstance(e, RunRecorded)]
    assert turn.text == "first question" and run.turn_id == turn.id and run.final_answer


def test_a_repl_left_without_a_turn_leaves_no_session(tmp_path: Path) -> None:
    async def scenario(s: Session) -> None:
        s.press(ALT_R)
        await s.until(lambda: not s.state.modes.refinement, "refinement off")

    assert play(scenario, tmp_path, session_start=_start(tmp_path)).session_id is None
    assert _entries(tmp_path) == []


def test_resuming_restores_history_and_modes_and_says_what_in_one_line(tmp_path: Path) -> None:
    single = ModeState(agent_mode=AgentMode.SINGLE, active_agent="agent-2", refinement=False)
    wanted = _earlier_session(tmp_path, single)

    async def scenario(s: Session) -> None:
        await s.until(lambda: s.state.session_id == wanted, "the resumed session")

    state = play(scenario, tmp_path, session_start=_start(tmp_path, resume=wanted))
    assert state.modes == single
    assert [t.task for t in state.history] == ["an earlier question"]
    screen = "".join(text for block in state.transcript for _, text, *_ in block)
    notice = (
        f"resumed session {wanted}: 1 turn; "
        "restored default mode, single agent (agent-2), refinement off\n"
    )
    assert notice in screen
    assert "an earlier question" in screen and "an earlier answer" in screen
    last = read_session(tmp_path / "sessions" / wanted / "session.jsonl").entries[-1]
    assert isinstance(last, ModeChanged) and last.source is ModeSource.RESTORE


def test_the_next_run_after_resuming_is_shown_the_earlier_turn(tmp_path: Path) -> None:
    wanted = _earlier_session(tmp_path, ModeState())

    async def scenario(s: Session) -> None:
        await s.until(lambda: s.state.session_id == wanted, "the resumed session")
        await s.result_of("a later question")

    state = play(scenario, tmp_path, session_start=_start(tmp_path, resume=wanted))
    assert [t.task for t in state.history] == ["an earlier question", "a later question"]
    [(_, entries)] = _entries(tmp_path)
    assert [e.text for e in entries if isinstance(e, UserTurn)][-1] == "a later question"


def test_a_mode_flag_wins_over_the_resumed_collaboration_mode(tmp_path: Path) -> None:
    wanted = _earlier_session(tmp_path, ModeState(collaboration=CollaborationMode.PLAN))

    async def scenario(s: Session) -> None:
        await s.until(lambda: s.state.session_id == wanted, "the resumed session")

    state = play(
        scenario,
        tmp_path,
        session_start=_start(tmp_path, resume=wanted, flags=RunFlags(collaboration_given=True)),
        modes=ModeState(collaboration=CollaborationMode.EXECUTE),
    )
    assert state.modes.collaboration is CollaborationMode.EXECUTE


def test_a_refinement_flag_wins_over_the_resumed_refinement_and_keeps_the_rest(
    tmp_path: Path,
) -> None:
    resumed = ModeState(collaboration=CollaborationMode.PLAN, refinement=False)
    wanted = _earlier_session(tmp_path, resumed)

    async def scenario(s: Session) -> None:
        await s.until(lambda: s.state.session_id == wanted, "the resumed session")

    state = play(
        scenario,
        tmp_path,
        session_start=_start(tmp_path, resume=wanted, flags=RunFlags(refinement_given=True)),
        modes=ModeState(refinement=True),
    )
    assert state.modes.refinement is True
    assert state.modes.collaboration is CollaborationMode.PLAN


def test_compact_summarises_older_turns_and_keeps_the_latest_verbatim(tmp_path: Path) -> None:
    async def scenario(s: Session) -> None:
        for i in range(3):
            await s.result_of(f"question {i}")
        s.type("/compact keep the numbers")
        await s.until(lambda: s.state.history[0].task == SUMMARY_QUESTION, "the compaction")

    state = play(
        scenario,
        tmp_path,
        session_start=_start(tmp_path),
        compaction=CompactionPolicy(preserve_recent=1),
    )
    [(_, entries)] = _entries(tmp_path)
    [compacted] = [e for e in entries if isinstance(e, Compacted)]
    assert compacted.trigger is CompactionTrigger.MANUAL
    assert compacted.instructions == "keep the numbers"
    assert [t.task for t in state.history] == [SUMMARY_QUESTION, "question 2"]
    assert "question 0" in state.history[0].final_answer


def test_compaction_happens_after_a_turn_whose_last_call_passed_the_threshold(
    tmp_path: Path,
) -> None:
    async def scenario(s: Session) -> None:
        await s.result_of("question 0")
        await s.result_of("question 1")
        await s.until(lambda: not s.state.running, "the compaction")

    state = play(
        scenario,
        tmp_path,
        session_start=_start(tmp_path),
        compaction=CompactionPolicy(threshold_tokens=10, preserve_recent=1),
    )
    [(_, entries)] = _entries(tmp_path)
    [compacted] = [e for e in entries if isinstance(e, Compacted)]
    assert compacted.trigger is CompactionTrigger.AUTOMATIC
    assert [t.task for t in state.history] == [SUMMARY_QUESTION, "question 1"]


def test_compaction_off_never_compacts(tmp_path: Path) -> None:
    async def scenario(s: Session) -> None:
        await s.result_of("question 0")
        await s.result_of("question 1")

    play(
        scenario,
        tmp_path,
        session_start=_start(tmp_path),
        compaction=CompactionPolicy(enabled=False, threshold_tokens=10, preserve_recent=1),
    )
    [(_, entries)] = _entries(tmp_path)
    assert not any(isinstance(e, Compacted) for e in entries)


def test_the_resume_picker_lists_other_sessions_and_resumes_the_chosen(tmp_path: Path) -> None:
    wanted = _earlier_session(tmp_path, ModeState(refinement=False))

    async def scenario(s: Session) -> None:
        s.type("/resume")
        await s.until(lambda: s.state.dialog is Dialog.SESSIONS, "the picker")
        [choice] = s.state.session_choices
        assert choice.id == wanted and choice.name == "an earlier question"
        assert choice.detail.endswith("1 turn")
        s.press(ENTER)
        await s.until(lambda: s.state.session_id == wanted, "the chosen session")

    state = play(scenario, tmp_path, session_start=_start(tmp_path))
    assert not state.modes.refinement


def test_resume_without_a_session_on_the_command_line_opens_the_picker(tmp_path: Path) -> None:
    _earlier_session(tmp_path, ModeState())

    async def scenario(s: Session) -> None:
        await s.until(lambda: s.state.dialog is Dialog.SESSIONS, "the picker")

    play(scenario, tmp_path, session_start=_start(tmp_path, resume=""))


def test_clear_starts_a_new_session_at_the_next_turn(tmp_path: Path) -> None:
    async def scenario(s: Session) -> None:
        await s.result_of("in the first session")
        first = s.state.session_id
        s.type("/clear")
        await s.until(lambda: s.state.session_id is None, "the session closed")
        await s.result_of("in the second session")
        assert s.state.session_id not in (None, first)

    play(scenario, tmp_path, session_start=_start(tmp_path))
    texts = [[e.text for e in es if isinstance(e, UserTurn)] for _, es in _entries(tmp_path)]
    assert sorted(texts) == [["in the first session"], ["in the second session"]]


def test_plan_versions_and_the_decisions_about_them_are_recorded(tmp_path: Path) -> None:
    async def scenario(s: Session) -> None:
        s.press(SHIFT_TAB)
        await s.until(lambda: s.state.plan_mode, "plan mode")
        await s.result_of("Plan a garden party")
        await s.until(lambda: s.state.dialog is Dialog.PLAN, "the plan dialog")
        runs = s.state.usage.runs
        s.press("3")  # Revise
        s.type("add a rain plan")
        await s.finish(runs, "the revision")
        await s.until(lambda: s.state.dialog is Dialog.PLAN, "the revised plan")
        s.press("4")  # Cancel
        await s.until(lambda: s.state.dialog is Dialog.NONE, "the dialog closed")

    play(scenario, tmp_path, session_start=_start(tmp_path))
    [(_, entries)] = _entries(tmp_path)
    plans = [e for e in entries if isinstance(e, PlanProposed)]
    decisions = [e for e in entries if isinstance(e, PlanDecided)]
    assert [p.version for p in plans] == [1, 2]
    assert json.loads(plans[0].plan)["goal"]
    assert [(d.version, d.decision, d.feedback) for d in decisions] == [
        (1, PlanDecision.REVISED, "add a rain plan"),
        (2, PlanDecision.CANCELLED, ""),
    ]


def test_status_names_the_session(tmp_path: Path) -> None:
    async def scenario(s: Session) -> None:
        s.type("/status")
        await s.until(lambda: "session: none yet" in s.transcript(), "the status")
        await s.result_of("a question")
        s.type("/status")
        await s.until(lambda: f"session: {s.state.session_id}\n" in s.transcript(), "the id")

    play(scenario, tmp_path, session_start=_start(tmp_path))


def test_starting_the_repl_prunes_sessions_past_the_retention(tmp_path: Path) -> None:
    old = _earlier_session(tmp_path, ModeState())
    path = tmp_path / "sessions" / old / "session.jsonl"
    forty_days_ago = path.stat().st_mtime - 40 * 86_400
    os.utime(path, (forty_days_ago, forty_days_ago))

    async def scenario(s: Session) -> None:
        await s.until(lambda: not path.exists(), "the old session pruned")

    play(scenario, tmp_path, session_start=_start(tmp_path))  # the default: 30 days
