"""The loop's events: text deltas are ephemeral, tool arguments are cut to a preview, and a
call's output and error are kept whole."""

from __future__ import annotations

from conclave.actors.agent.events import LlmRequestFinished
from conclave.actors.events import (
    DomainEvent,
    LlmRetry,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from conclave.actors.events.loop import PREVIEW_BYTES, clip
from conclave.runtime import dumps, loads
from tests.events.strategies import DOMAIN_EVENTS


def _started(arguments: str) -> ToolCallStarted:
    return ToolCallStarted(at=0.0, agent="a1", tool="read_file", call_id="c1", arguments=arguments)


def test_text_deltas_are_ephemeral() -> None:
    assert TextDelta.ephemeral


def test_every_other_domain_event_is_kept_in_the_log() -> None:
    kept = {kind for kind, cls in DOMAIN_EVENTS.items() if not cls.ephemeral}

    assert kept == set(DOMAIN_EVENTS) - {"text_delta"}
    assert not DomainEvent.ephemeral
    assert not LlmRequestFinished.ephemeral and not LlmRetry.ephemeral


def test_tool_arguments_that_fit_are_kept_whole() -> None:
    text = "x" * PREVIEW_BYTES

    assert _started(text).arguments == text


def test_tool_arguments_past_2_kb_are_cut_to_2_kb_saying_how_long_they_were() -> None:
    cut = _started("x" * 10_000).arguments

    assert len(cut.encode()) <= PREVIEW_BYTES
    assert cut.startswith("x" * 1000)
    assert cut.endswith("…[10000 bytes, cut]")


def _finished(output: str, error: str | None = None) -> ToolCallFinished:
    return ToolCallFinished(
        at=0.0,
        agent="a1",
        tool="run_shell",
        call_id="c1",
        arguments="{}",
        output=output,
        duration=0.1,
        ok=error is None,
        error=error,
    )


def test_a_tool_output_past_2_kb_is_kept_whole_and_round_trips() -> None:
    finished = _finished("y" * 50_000)

    assert finished.output == "y" * 50_000
    assert loads(dumps(finished), ToolCallFinished) == finished


def test_a_cut_never_splits_a_character() -> None:
    cut = clip("é" * 3000)  # two bytes each: the limit falls inside one of them, or not

    assert len(cut.encode()) <= PREVIEW_BYTES
    assert set(cut.partition("…")[0]) == {"é"}


def test_cutting_is_idempotent_so_a_cut_event_round_trips() -> None:
    event = _started("z" * 9999)

    assert clip(event.arguments) == event.arguments
    assert loads(dumps(event), ToolCallStarted) == event


def test_a_tool_error_past_2_kb_is_kept_whole_and_round_trips() -> None:
    error = "the command exited with code 1:\n" + "p" * 5000
    finished = _finished(f"Error: {error}", error)

    assert finished.error == error
    assert loads(dumps(finished), ToolCallFinished) == finished


def test_a_call_is_not_refused_unless_it_says_so() -> None:
    assert not _finished("ok").refused


def test_a_call_without_an_error_keeps_none() -> None:
    finished = ToolCallFinished(
        at=0.0,
        agent="a1",
        tool="read_file",
        call_id="c1",
        arguments="{}",
        output="ok",
        duration=0.1,
        ok=True,
        error=None,
    )

    assert finished.error is None
