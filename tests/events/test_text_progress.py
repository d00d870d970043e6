"""Text progress on stderr: the replay's lines as they happen, RunView rows with --verbose,
and a line when something watching the run fails. (stream-json: tests/cli/test_stream_json.)"""

from __future__ import annotations

import io

import trio

from conclave.actors.agent.events import LlmRequestStarted, RoundStarted
from conclave.actors.coordination.events import AnswerAdded, RunStarted
from conclave.actors.events import DropCause, EventHub, SubscriberDropped
from conclave.actors.llm.protocol import CallPurpose
from conclave.actors.run.driver import RunSpec
from conclave.actors.run.events import RunEnded
from conclave.actors.run.termination import Termination
from conclave.config.schema import AgentConfig, ConclaveConfig, FinalAnswerStrategy
from conclave.runtime import ChildStopped, HowStopped, LogOpened, TapFailed
from conclave.ui.headless.command import make_progress
from conclave.ui.progress import RunClock, Silent, StreamJson, TextProgress

STARTED = RunStarted(
    at=10.0,
    task="t",
    agents=("a1", "a2"),
    anonymous_ids=("agent1", "agent2"),
    strategy=FinalAnswerStrategy.WINNER_PRESENT,
)
ENDED = RunEnded(at=12.0, termination=Termination.COMPLETED, winner="a1", final_answer="x")


def progress(*, verbose: bool = False) -> tuple[TextProgress, io.StringIO]:
    clock = RunClock.__new__(RunClock)
    clock.origin, clock.wall = 10.0, 1_700_000_000.0
    out = io.StringIO()
    return TextProgress(out, verbose=verbose, clock=clock), out


def test_each_event_is_a_timed_line() -> None:
    text, out = progress()
    text.record(STARTED)
    text.record(AnswerAdded(at=11.5, agent="a1", label="agent1.1", content="Use it as a hook"))

    assert out.getvalue().splitlines() == [
        "[  0.00s] run started: 2 agents (a1, a2), strategy winner_present",
        "[  1.50s] a1 answered agent1.1: Use it as a hook",
    ]


def test_lines_are_timed_from_the_log_opening() -> None:
    text, out = progress()
    text.record(LogOpened(at=9.0, wall_time=1_700_000_000.0, pid=1))
    text.record(STARTED)

    assert out.getvalue().startswith("[  1.00s] run started")


def test_escape_sequences_in_an_answer_never_reach_the_terminal() -> None:
    text, out = progress()
    text.record(AnswerAdded(at=11.0, agent="a1", label="agent1.1", content="\x1b]0;pwned\x07ok"))

    assert "\x1b" not in out.getvalue()
    assert "\\x1b]0;pwned\\x07ok" in out.getvalue()


def test_a_dropped_watcher_gets_one_line() -> None:
    text, out = progress()
    text.record(
        SubscriberDropped(
            at=11.0,
            subscriber="websocket 10.0.0.7",
            cause=DropCause.FELL_BEHIND,
            detail="its buffer of 1024 events was full",
            delivered=1024,
        )
    )

    assert out.getvalue() == (
        "[  1.00s] watcher websocket 10.0.0.7 dropped (fell_behind): "
        "its buffer of 1024 events was full\n"
    )


def test_a_failed_tap_gets_one_line_even_if_its_error_spans_lines() -> None:
    text, out = progress()
    text.record(TapFailed(at=11.0, tap="Recorder", error="ValueError: bad\nthings\x1b[2J"))

    assert out.getvalue() == (
        "[  1.00s] event tap Recorder removed: it raised ValueError: bad things\\x1b[2J\n"
    )


def subscribed(text: TextProgress) -> EventHub:
    """A hub delivering to ``text`` what ``conclave run`` subscribes it to."""
    hub = EventHub()
    hub.subscribe_sync(text.record, text.kinds)
    return hub


def test_a_failed_tap_reaches_text_progress_as_one_line() -> None:
    text, out = progress()
    subscribed(text).record(TapFailed(at=11.0, tap="Recorder", error="ValueError: bad"))

    assert out.getvalue() == "[  1.00s] event tap Recorder removed: it raised ValueError: bad\n"


def test_a_child_that_crashed_while_being_stopped_reaches_text_progress_as_a_line() -> None:
    text, out = progress()
    subscribed(text).record(
        ChildStopped(
            at=11.0, supervisor="run", child="agent:a1", how=HowStopped.CRASHED, error="E: x"
        )
    )

    assert out.getvalue() == "[  1.00s] agent:a1 crashed while run stopped it (E: x)\n"


def test_a_child_stopped_without_a_crash_prints_nothing() -> None:
    text, out = progress()
    subscribed(text).record(
        ChildStopped(at=11.0, supervisor="run", child="a1", how=HowStopped.GRACEFUL)
    )

    assert out.getvalue() == ""


def test_nothing_is_printed_after_run_ended() -> None:
    text, out = progress()
    text.record(ENDED)
    text.record(AnswerAdded(at=13.0, agent="a1", label="agent1.2", content="late"))

    assert out.getvalue() == "[  2.00s] run ended: completed, winner a1\n"


def test_verbose_prints_the_agents_table_from_the_run_view_when_the_run_ends() -> None:
    text, out = progress(verbose=True)
    for event in (
        STARTED,
        RoundStarted(at=10.5, agent="a1", round=1, tools=("new_answer",)),
        LlmRequestStarted(at=10.5, agent="a1", purpose=CallPurpose.ROUND),
        AnswerAdded(at=11.0, agent="a1", label="agent1.1", content="x"),
        ENDED,
    ):
        text.record(event)

    assert out.getvalue().splitlines()[-3:] == [
        "agent  status   LLM calls  tokens in  tokens out  answer    vote",
        "a1     working          1          0           0  agent1.1  -",
        "a2     idle             0          0           0  -         -",
    ]


def test_without_verbose_no_agent_rows_are_printed() -> None:
    text, out = progress()
    text.record(STARTED)
    text.record(ENDED)

    assert len(out.getvalue().splitlines()) == 2


async def test_each_output_format_gets_its_renderer() -> None:
    spec = RunSpec(task="t", config=ConclaveConfig(agents=(AgentConfig(id="a1"),)))

    def make(fmt: str, verbose: bool = False) -> object:
        return make_progress(spec, fmt, verbose=verbose, include_partial=False)

    assert isinstance(make("text"), TextProgress)
    assert isinstance(make("json"), Silent)
    assert isinstance(make("json", verbose=True), TextProgress)
    assert isinstance(make("stream-json"), StreamJson)
    assert Silent.kinds == ()


async def test_the_clock_starts_when_the_renderer_is_made() -> None:
    await trio.sleep(0.001)
    clock = RunClock()

    assert clock.t(trio.current_time()) < 0.01
