"""Specs of the recorder a front end writes a session through."""

from __future__ import annotations

from pathlib import Path

from conclave.actors.agent.events import LlmRequestFinished
from conclave.actors.llm.protocol import CallOutcome, CallPurpose
from conclave.actors.session.entries import ModeChanged
from conclave.actors.session.recorder import LastCallTokens, SessionRecorder
from conclave.actors.session.store import open_session, read_session
from conclave.config.modes import ModeSource, ModeState


def _finished(tokens: int, *, reported: bool = True) -> LlmRequestFinished:
    return LlmRequestFinished(
        at=0.0,
        agent="a",
        purpose=CallPurpose.ROUND,
        outcome=CallOutcome.OK,
        input_tokens=tokens,
        usage_reported=reported,
    )


def test_a_mode_state_equal_to_the_last_one_recorded_is_not_recorded_again(
    tmp_path: Path,
) -> None:
    with open_session(tmp_path) as session:
        recorder = SessionRecorder(session)
        assert recorder.mode(ModeState(), ModeSource.FLAG) is not None
        assert recorder.mode(ModeState(), ModeSource.SHORTCUT) is None
        assert recorder.mode(ModeState(refinement=False), ModeSource.SHORTCUT) is not None
        assert recorder.mode(ModeState(refinement=False), ModeSource.RESTORE, always=True)
    changes = [e for e in read_session(session.path).entries if isinstance(e, ModeChanged)]
    assert [c.source for c in changes] == [ModeSource.FLAG, ModeSource.SHORTCUT, ModeSource.RESTORE]


def test_a_reopened_session_counts_its_plan_versions(tmp_path: Path) -> None:
    with open_session(tmp_path) as session:
        SessionRecorder(session).plan(version=1, plan="{}", run_id="r")
    with open_session(tmp_path, session.id) as again:
        assert SessionRecorder(again).plan_versions == 1


def test_the_last_calls_tokens_are_the_last_reported_ones() -> None:
    tokens = LastCallTokens()
    tokens.record(_finished(500))
    tokens.record(_finished(0, reported=False))  # a server that reported nothing
    assert tokens.input_tokens == 500
    tokens.record(_finished(700))
    assert tokens.input_tokens == 700


def test_no_reported_call_means_the_tokens_are_unknown() -> None:
    tokens = LastCallTokens()
    tokens.record(_finished(0, reported=False))
    assert tokens.input_tokens is None
