"""Text progress on a terminal: below the timeline, a live block of one line per agent (what
it does, for how long, LLM calls, tokens, retries), redrawn in place at most every 100 ms,
never taller than the terminal, erased before the result is printed; never streamed text.
On anything but a terminal, the plain timeline lines without an escape sequence.

The end-to-end specs run ``conclave run`` with a pseudo-terminal as its stderr (and stdout,
as a person's terminal is) and replay what it wrote on a small terminal model."""

from __future__ import annotations

import fcntl
import io
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
import unicodedata
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from conclave.actors.agent.events import (
    AgentStatusChanged,
    LlmRequestStarted,
    RoundStarted,
)
from conclave.actors.agent.status import AgentStatus
from conclave.actors.coordination.events import AnswerAdded, RunStarted, VoteAdded, VotingComplete
from conclave.actors.events import TextDelta, ToolCallStarted
from conclave.actors.events.view import AgentView, RunView
from conclave.actors.llm.protocol import CallPurpose
from conclave.actors.run.driver import RunSpec
from conclave.actors.run.events import RunEnded
from conclave.actors.run.termination import Termination
from conclave.config.schema import AgentConfig, ConclaveConfig, FinalAnswerStrategy
from conclave.ui.headless.command import make_progress
from conclave.ui.headless.live_status import (
    REDRAW_INTERVAL,
    LiveStatus,
    agent_state,
    status_block,
    status_line,
    wants_live_status,
)
from conclave.ui.progress import RunClock, RunProgress, TextProgress
from tests.cli.helpers import CONCLAVE, TASK, write_config

SIZE = os.terminal_size((100, 24))
ESCAPE = re.compile(r"\x1b\[(\d*)([A-Za-z])")


# ---------------------------------------------------------------------------- a terminal


class Screen:
    """The few terminal controls the live block uses, on a screen as tall as needed:
    printing, ``\\r``, ``\\n`` (to the next line's start), cursor up (``ESC [ n A``) and
    erase below (``ESC [ J``). Any other escape sequence fails the test."""

    def __init__(self) -> None:
        self.lines: list[str] = [""]
        self.row = 0
        self.col = 0

    def feed(self, text: str) -> None:
        i = 0
        while i < len(text):
            char = text[i]
            if char == "\x1b":
                match = ESCAPE.match(text, i)
                assert match is not None, f"unexpected escape {text[i : i + 8]!r}"
                self._control(int(match.group(1) or 1), match.group(2))
                i = match.end()
                continue
            if char == "\r":
                self.col = 0
            elif char == "\n":  # as the terminal's output processing has it (ONLCR)
                self.row, self.col = self.row + 1, 0
                if self.row == len(self.lines):
                    self.lines.append("")
            else:
                line = self.lines[self.row].ljust(self.col)
                self.lines[self.row] = line[: self.col] + char + line[self.col + 1 :]
                self.col += 1
            i += 1

    def _control(self, n: int, command: str) -> None:
        if command == "A":
            self.row = max(self.row - n, 0)
        elif command == "J":
            self.lines[self.row] = self.lines[self.row][: self.col]
            del self.lines[self.row + 1 :]
        else:
            raise AssertionError(f"unexpected control ESC [ {n} {command}")

    def text(self) -> list[str]:
        """The screen's lines, less the empty ones at its bottom."""
        lines = list(self.lines)
        while lines and not lines[-1]:
            lines.pop()
        return lines


def on_a_terminal(
    *args: str, cwd: Path, rows: int = 24, columns: int = 100, timeout: float = 60
) -> tuple[int, str]:
    """Run ``conclave`` with a pseudo-terminal of that size as its stdout and stderr; its
    exit code and everything it wrote there."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color"}
    process = subprocess.Popen(
        [str(CONCLAVE), *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    written = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], deadline - time.monotonic())
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every writer has closed the terminal
                break
            if not chunk:
                break
            written += chunk
    finally:
        os.close(master)
        if process.poll() is None:
            process.kill()
    return process.wait(timeout=10), written.decode("utf-8")


def slow_agents(n: int, latency: float = 0.3) -> list[dict[str, object]]:
    """Agents slow enough that the block is drawn several times, each slower than the one
    before, so that the early ones wait (answered, voted) while the others work."""
    return [{"id": f"agent-{i}", "seed": i, "latency": latency * i} for i in range(1, n + 1)]


BLOCK_HEADER = re.compile(r"^[a-z ]+, \d+\.\ds: \d+ answers?, \d+ votes?$")
AGENT_LINE = re.compile(r"^\S+ +.+ +\d+\.\ds +\d+ LLM calls? +[\d,]+ tokens")


def block_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if BLOCK_HEADER.match(line) or AGENT_LINE.match(line)]


# ---------------------------------------------------------------------------- end to end


def test_a_run_on_a_terminal_shows_each_agents_status_live(tmp_path: Path) -> None:
    config = write_config(tmp_path / "c.yaml", slow_agents(3, latency=0.2))

    code, written = on_a_terminal("run", "--config", str(config), TASK, cwd=tmp_path)

    assert code == 0, written
    for agent in ("agent-1", "agent-2", "agent-3"):
        assert re.search(rf"{agent} +thinking +\d+\.\ds +1 LLM call +0 tokens", written)
    assert re.search(r"agent-1 +voted for agent\d\.1 +\d+\.\ds +\d+ LLM calls", written)
    assert re.search(r"^coordinating, \d+\.\ds: 3 answers, 1 vote\r$", written, re.M)
    assert "\r\x1b[4A\x1b[J" in written  # a header and three agents, redrawn in place


def test_the_screen_a_run_leaves_holds_the_timeline_and_the_answer_not_the_block(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path / "c.yaml", slow_agents(3, latency=0.2))

    code, written = on_a_terminal("run", "--config", str(config), TASK, cwd=tmp_path)
    screen = Screen()
    screen.feed(written)

    lines = screen.text()
    assert code == 0
    assert block_lines(written.splitlines())  # it was there
    assert block_lines(lines) == []  # and it is gone
    ended = next(i for i, line in enumerate(lines) if "run ended: completed" in line)
    assert lines[0].startswith("conclave: logging to")
    assert all(re.match(r"^\[ *\d+\.\d\ds\] ", line) for line in lines[1 : ended + 1])
    assert lines[ended + 1].startswith("On “")  # the answer, right below the timeline
    assert any(line.startswith("completed: winner") for line in lines[ended + 1 :])


def test_a_terminal_too_short_for_every_agent_shows_what_fits_and_counts_the_rest(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path / "c.yaml", slow_agents(12, latency=0.05))

    code, written = on_a_terminal("run", "--config", str(config), TASK, cwd=tmp_path, rows=8)

    assert code == 0
    assert "+7 more agents" in written  # 7 lines: the run, 5 agents and this one
    heights = [int(n) for n in re.findall(r"\r\x1b\[(\d+)A\x1b\[J", written)]
    assert heights and max(heights) == 7  # never taller than the terminal less a line


def test_a_run_whose_stderr_is_not_a_terminal_prints_timeline_lines_without_escapes(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path / "c.yaml", slow_agents(3, latency=0.1))
    env = {**os.environ, "TERM": "xterm-256color"}

    done = subprocess.run(
        [str(CONCLAVE), "run", "--config", str(config), TASK],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )

    assert done.returncode == 0
    assert "\x1b" not in done.stderr and "\x1b" not in done.stdout
    assert block_lines(done.stderr.splitlines()) == []
    assert re.search(r"^\[ *\d+\.\d\ds\] run ended: completed", done.stderr, re.M)


# ---------------------------------------------------------------------------- the choice


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_the_live_block(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm")
    assert wants_live_status(FakeTerminal())


async def test_text_progress_to_a_terminal_is_the_live_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setattr(sys, "stderr", FakeTerminal())
    spec = RunSpec(task="t", config=ConclaveConfig(agents=(AgentConfig(id="a1"),)))

    def make(fmt: str) -> RunProgress:
        return make_progress(spec, fmt, verbose=True, include_partial=False)

    assert isinstance(make("text"), LiveStatus)
    assert type(make("json")) is TextProgress  # --verbose progress beside JSON stays plain


def test_a_dumb_terminal_gets_plain_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "dumb")
    assert not wants_live_status(FakeTerminal())


def test_a_pipe_gets_plain_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm")
    assert not wants_live_status(io.StringIO())


# ---------------------------------------------------------------------------- the lines


def agent(**changes: Any) -> AgentView:
    return attrs.evolve(AgentView(agent="a1", started_at=10.0), **changes)


@pytest.mark.parametrize(
    ("changes", "state"),
    [
        ({}, "waiting"),
        ({"status": AgentStatus.WORKING}, "thinking"),
        ({"status": AgentStatus.WORKING, "tool": "read_file"}, "tool read_file"),
        ({"status": AgentStatus.ANSWERED, "answer": "agent1.2"}, "answered agent1.2"),
        ({"status": AgentStatus.ANSWERED_NO_VOTING, "answer": "agent1.1"}, "answered agent1.1"),
        ({"status": AgentStatus.VOTED, "vote": "agent2.1"}, "voted for agent2.1"),
        ({"status": AgentStatus.VOTED}, "voted"),
        ({"status": AgentStatus.RESTARTING}, "restarting"),
        ({"status": AgentStatus.EXCLUDED, "excluded": "401"}, "failed"),
        ({"status": AgentStatus.PRESENTING}, "presenting"),
        ({"status": AgentStatus.STOPPED}, "stopped"),
    ],
)
def test_an_agents_state_says_what_it_is_doing(changes: dict[str, Any], state: str) -> None:
    assert agent_state(agent(**changes)) == state


def test_an_agents_line_has_its_elapsed_time_calls_tokens_retries_and_model() -> None:
    line = status_line(
        agent(
            status=AgentStatus.WORKING,
            llm_calls=3,
            input_tokens=1000,
            output_tokens=234,
            llm_retries=2,
            model="gpt-test-1",
        ),
        now=22.34,
        name_width=2,
    )

    assert line.split() == [
        "a1", "thinking", "12.3s", "3", "LLM", "calls", "1,234", "tokens", "2", "retries",
        "gpt-test-1",
    ]  # fmt: skip


def test_an_agent_without_retries_or_model_shows_neither() -> None:
    line = status_line(agent(status=AgentStatus.WORKING, llm_calls=1), now=11.0)

    assert line.rstrip().endswith("1 LLM call           0 tokens")


def view_of(n: int, *, finished: int = 0) -> RunView:
    """A run of ``n`` agents at t = 20, the first ``finished`` of them stopped."""
    ids = tuple(f"a{i}" for i in range(1, n + 1))
    view = RunView.from_events(
        [
            RunStarted(
                at=10.0,
                task="t",
                agents=ids,
                anonymous_ids=ids,
                strategy=FinalAnswerStrategy.WINNER_PRESENT,
            )
        ]
    )
    for i, name in enumerate(ids):
        view.apply(RoundStarted(at=11.0, agent=name, round=1, tools=()))
        if i < finished:
            view.apply(AgentStatusChanged(at=15.0, agent=name, status=AgentStatus.STOPPED))
    return view


def test_the_block_is_a_line_about_the_run_then_one_per_agent() -> None:
    view = view_of(2)
    view.apply(AnswerAdded(at=12.0, agent="a1", label="a1.1", content="x"))

    block = status_block(view, 20.0, SIZE)

    assert block[0] == "coordinating, 10.0s: 1 answer, 0 votes"
    assert [line.split()[:2] for line in block[1:]] == [["a1", "thinking"], ["a2", "thinking"]]


def test_the_block_is_never_taller_than_the_terminal_less_a_line() -> None:
    block = status_block(view_of(50), 20.0, os.terminal_size((100, 10)))

    assert len(block) == 9
    assert block[-1] == "+43 more agents"


def test_agents_still_working_are_shown_before_those_that_finished() -> None:
    block = status_block(view_of(10, finished=6), 20.0, os.terminal_size((100, 6)))

    assert [line.split()[0] for line in block[1:-1]] == ["a7", "a8", "a9"]
    assert block[-1] == "+7 more agents"


def columns(line: str) -> int:
    """The terminal columns ``line`` takes (wide East Asian characters take two)."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in line)


@pytest.mark.parametrize("tool", ["t" * 300, "読" * 300, "\x1b" * 300])
def test_no_line_of_the_block_wraps(tool: str) -> None:
    view = view_of(1)
    view.apply(ToolCallStarted(at=12.0, agent="a1", tool="x", call_id="c", arguments=""))
    view.agents["a1"] = attrs.evolve(view.agents["a1"], model=tool)

    block = status_block(view, 20.0, os.terminal_size((60, 24)))

    assert block[1].endswith("…")
    assert all(columns(line) <= 59 for line in block)


def test_the_block_shows_control_characters_escaped() -> None:
    view = view_of(1)
    view.apply(ToolCallStarted(at=12.0, agent="a1", tool="x\x1b[2J", call_id="c", arguments=""))

    assert "tool x\\x1b[2J" in status_block(view, 20.0, SIZE)[1]


def test_the_runs_phase_reads_as_words() -> None:
    view = view_of(1)
    view.apply(VotingComplete(at=12.0, winner="a1", label="a1.1", tally={"a1.1": 1}))

    assert status_block(view, 20.0, SIZE)[0].startswith("voting complete, 10.0s:")


def test_a_run_not_started_has_no_block() -> None:
    assert status_block(RunView(), 20.0, SIZE) == []


# ---------------------------------------------------------------------------- redrawing


def live(out: io.StringIO, rows: int = 24) -> LiveStatus:
    clock = RunClock()
    return LiveStatus(out, verbose=False, clock=clock, size=lambda: os.terminal_size((100, rows)))


def started(at: float) -> RunStarted:
    return RunStarted(
        at=at,
        task="t",
        agents=("a1", "a2"),
        anonymous_ids=("g1", "g2"),
        strategy=FinalAnswerStrategy.WINNER_PRESENT,
    )


def screen_of(out: io.StringIO) -> list[str]:
    screen = Screen()
    screen.feed(out.getvalue())
    return screen.text()


async def test_events_within_100_ms_of_a_redraw_wait_for_the_next(autojump_clock: object) -> None:
    out = io.StringIO()
    status = live(out)
    now = trio.current_time()
    status.record(started(now))
    for _ in range(20):
        status.record(LlmRequestStarted(at=now, agent="a1", purpose=CallPurpose.ROUND))

    await trio.sleep(REDRAW_INTERVAL / 2)
    status.record(LlmRequestStarted(at=trio.current_time(), agent="a2", purpose=CallPurpose.ROUND))
    assert out.getvalue().count("coordinating") == 1
    await trio.sleep(REDRAW_INTERVAL / 2 + 0.001)
    status.record(LlmRequestStarted(at=trio.current_time(), agent="a2", purpose=CallPurpose.ROUND))
    assert out.getvalue().count("coordinating") == 2


async def test_a_timeline_line_takes_the_blocks_place_and_the_block_comes_back_below(
    autojump_clock: object,
) -> None:
    out = io.StringIO()
    status = live(out)
    status.record(started(trio.current_time()))
    await trio.sleep(REDRAW_INTERVAL + 0.001)
    status.record(AnswerAdded(at=trio.current_time(), agent="a1", label="g1.1", content="x"))

    lines = screen_of(out)
    assert re.fullmatch(r"\[ *[\d.]+s\] run started: .*", lines[0])
    assert re.fullmatch(r"\[ *[\d.]+s\] a1 answered g1.1: x", lines[1])
    assert lines[2].startswith("coordinating") and len(lines) == 5


async def test_the_run_ending_erases_the_block(autojump_clock: object) -> None:
    out = io.StringIO()
    status = live(out)
    status.record(started(trio.current_time()))
    await trio.sleep(REDRAW_INTERVAL)
    status.record(
        RunEnded(
            at=trio.current_time(),
            termination=Termination.COMPLETED,
            winner=None,
            final_answer=None,
        )
    )
    status.record(VoteAdded(at=trio.current_time(), voter="a1", label="g1.1", reason="r"))

    lines = screen_of(out)
    assert [re.sub(r"^\[ *[\d.]+s\] ", "", line) for line in lines] == [
        "run started: 2 agents (a1, a2), strategy winner_present",
        "run ended: completed",
    ]


async def test_streamed_text_is_never_shown(autojump_clock: object) -> None:
    out = io.StringIO()
    status = live(out)
    status.record(started(trio.current_time()))
    for _ in range(5):
        await trio.sleep(REDRAW_INTERVAL)
        status.record(TextDelta(at=trio.current_time(), agent="a1", text="PARTIAL-TEXT"))

    assert "PARTIAL-TEXT" not in out.getvalue()


async def test_the_block_is_redrawn_while_no_event_arrives(autojump_clock: object) -> None:
    out = io.StringIO()
    status = live(out)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(status.animate)
        status.record(started(trio.current_time()))
        status.record(RoundStarted(at=trio.current_time(), agent="a1", round=1, tools=()))
        await trio.sleep(1.05)
        nursery.cancel_scope.cancel()

    assert re.search(r"a1 +thinking +1\.0s", out.getvalue())
    assert out.getvalue().count("coordinating") == 11


async def test_the_ticker_erases_the_block_when_the_run_ends(autojump_clock: object) -> None:
    out = io.StringIO()
    status = live(out)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(status.animate)
        status.record(started(trio.current_time()))
        await trio.sleep(0.5)
        status.record(
            RunEnded(
                at=trio.current_time(),
                termination=Termination.COMPLETED,
                winner=None,
                final_answer=None,
            )
        )
    # The nursery closed by itself: animating ended with the run.

    assert not [line for line in screen_of(out) if line.startswith("coordinating")]


async def test_a_redraw_that_raises_stops_the_ticking_not_the_run(autojump_clock: object) -> None:
    sizes = iter([os.terminal_size((100, 24))])

    def size() -> os.terminal_size:
        return next(sizes)  # StopIteration from the second redraw on

    out = io.StringIO()
    status = LiveStatus(out, verbose=False, clock=RunClock(), size=size)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(status.animate)
        status.record(started(trio.current_time()))
    # The nursery closed by itself: the failed redraw ended the animation, raising nothing.

    [line] = screen_of(out)  # the block erased, the timeline kept
    assert "run started" in line


class GoneTerminal(io.StringIO):
    """A terminal whose every write fails, as a closed one's does; counts the tries."""

    writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        raise OSError(5, "Input/output error")


async def test_a_terminal_that_went_away_silences_it(autojump_clock: object) -> None:
    out = GoneTerminal()
    status = LiveStatus(out, verbose=False, clock=RunClock(), size=lambda: SIZE)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(status.animate)
        status.record(started(trio.current_time()))  # a line, then the block: the first fails
        await trio.sleep(1.0)
        status.record(AnswerAdded(at=trio.current_time(), agent="a1", label="g1.1", content="x"))
        nursery.cancel_scope.cancel()

    assert out.writes == 1
