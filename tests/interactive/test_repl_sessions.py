"""The interactive agent's turns in the REPL's session: the person's message, each run it
launched (and a plan it proposed), its reply; a resumed session's conversation is what the
agent goes on from."""

from __future__ import annotations

from pathlib import Path

from conclave.actors.session.entries import (
    AssistantReply,
    Compacted,
    PlanProposed,
    RunRecorded,
    SessionEntry,
    UserTurn,
)
from conclave.actors.session.store import read_session
from conclave.config.schema.interactive import ContextCompaction, InteractiveModeConfig
from conclave.ui.repl.session_commands import SessionStart
from tests.repl.harness import Session, config, play

INTERACTIVE = config(interactive_mode=InteractiveModeConfig(require_approval=False))


def _entries(tmp_path: Path) -> list[tuple[SessionEntry, ...]]:
    return [
        read_session(p).entries for p in sorted((tmp_path / "sessions").glob("*/session.jsonl"))
    ]


async def _replied(session: Session, text: str) -> None:
    await session.until(lambda: text in session.transcript(), f"the reply {text!r}")
    await session.until(lambda: not session.state.running, "the turn's end")


def test_a_direct_answer_is_recorded_as_the_turns_reply(tmp_path: Path) -> None:
    async def scenario(s: Session) -> None:
        s.type("Which agents are here?")
        await _replied(s, "No run needed")

    play(
        scenario,
        tmp_path,
        conclave=INTERACTIVE,
        session_start=SessionStart(root=tmp_path / "sessions"),
    )
    [entries] = _entries(tmp_path)
    [turn] = [e for e in entries if isinstance(e, UserTurn)]
    [reply] = [e for e in entries if isinstance(e, AssistantReply)]
    assert turn.text == "Which agents are here?"
    assert reply.turn_id == turn.id and reply.text.startswith("No run needed")
    assert not [e for e in entries if isinstance(e, RunRecorded)]


def test_launched_runs_and_the_plan_are_linked_to_the_turn(tmp_path: Path) -> None:
    async def scenario(s: Session) -> None:
        s.type("Plan and then build a todo CLI")
        await _replied(s, "Planned, then executed the plan")

    play(
        scenario,
        tmp_path,
        conclave=INTERACTIVE,
        session_start=SessionStart(root=tmp_path / "sessions"),
    )
    [entries] = _entries(tmp_path)
    [turn] = [e for e in entries if isinstance(e, UserTurn)]
    runs = [e for e in entries if isinstance(e, RunRecorded)]
    assert [r.turn_id for r in runs] == [turn.id, turn.id]
    assert all(r.log_dir is not None and (Path(r.log_dir) / "events.jsonl").is_file() for r in runs)
    [plan] = [e for e in entries if isinstance(e, PlanProposed)]
    assert plan.run_id == runs[0].run_id
    [reply] = [e for e in entries if isinstance(e, AssistantReply)]
    assert reply.turn_id == turn.id and entries.index(reply) > entries.index(runs[1])


def test_a_resumed_session_is_the_agents_conversation(tmp_path: Path) -> None:
    async def first(s: Session) -> None:
        s.type("Which agents are here?")
        await _replied(s, "No run needed")

    state = play(
        first,
        tmp_path,
        conclave=INTERACTIVE,
        session_start=SessionStart(root=tmp_path / "sessions"),
    )
    assert state.session_id is not None
    seen: list[int] = []

    async def second(s: Session) -> None:
        await s.until(lambda: len(s.state.history) == 1, "the resumed history")
        s.type("Still there?")
        await _replied(s, "No run needed for “Still there?”")
        flow = s.repl.approvals
        assert flow is not None and flow.session is not None
        messages = flow.session.transcript.messages
        seen.append(len(messages))
        assert [m.content for m in messages[1:3]] == [
            "Which agents are here?",
            "No run needed: 3 agents are configured: agent-1, agent-2, agent-3.",
        ]

    start = SessionStart(root=tmp_path / "sessions", resume=state.session_id)
    play(second, tmp_path, conclave=INTERACTIVE, session_start=start)
    assert seen == [5]  # system, the resumed exchange, this exchange


def test_compaction_past_the_threshold_shortens_the_agents_next_prompt(tmp_path: Path) -> None:
    compacting = config(
        interactive_mode=InteractiveModeConfig(
            require_approval=False,
            context_compaction=ContextCompaction(threshold_tokens=1_000, preserve_recent=1),
        )
    )
    prompts: list[int] = []

    async def scenario(s: Session) -> None:
        flow = s.repl.approvals
        # Three launched runs: the agent's third call reads ~1,050 tokens (the scripted
        # backend counts 4 characters a token), past the threshold.
        for task in ("Write a poem about trio", "Write a poem about asyncio", "Write a haiku"):
            s.type(task)
            await _replied(s, f"On “{task}”")
        await s.until(lambda: "compacted the conversation" in s.transcript(), "the compaction")
        s.type("Still there?")
        await _replied(s, "No run needed for “Still there?”")
        assert flow is not None and flow.session is not None
        prompts.append(len(flow.session.transcript.messages))

    play(
        scenario,
        tmp_path,
        conclave=compacting,
        session_start=SessionStart(root=tmp_path / "sessions"),
    )
    [entries] = _entries(tmp_path)
    [compacted] = [e for e in entries if isinstance(e, Compacted)]
    assert compacted.tokens_after < compacted.tokens_before
    # system; the summary and the kept exchange (each a message and its answer); this turn
    assert prompts == [7]
