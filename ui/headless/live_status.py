"""Live per-agent status on a terminal: one line per agent, redrawn in place.

When ``conclave run`` writes text progress to a terminal, the timeline lines scroll as they
do on a pipe, and below them a block shows each agent as the run's
:class:`~actors.events.view.RunView` has it now: what it is doing (thinking, running a tool,
answered, voted, restarting, failed...), for how long, its LLM calls, tokens and retries.
The block is redrawn in place with ANSI cursor movement, at most every
:data:`REDRAW_INTERVAL`, and never taller than the terminal (the rest is counted on a last
line). It is erased before anything else is written (a timeline line, the run's end), so
the screen the run leaves holds the timeline and the answer, not a stale block. Streamed
text is never shown: it would scroll the block away, and stream-json carries it.
"""

from __future__ import annotations

import math
import os
import unicodedata
from collections.abc import Callable
from typing import TextIO

import trio

from conclave.actors.agent.status import AgentStatus
from conclave.actors.events.view import AgentView, RunView
from conclave.runtime import Event
from conclave.ui.progress import RunClock, TextProgress
from conclave.ui.timeline import neutralise

__all__ = [
    "REDRAW_INTERVAL",
    "LiveStatus",
    "agent_state",
    "status_block",
    "status_line",
    "wants_live_status",
]

REDRAW_INTERVAL = 0.1
"""Seconds between two redraws of the block, at least: faster is flicker, not news."""

_DEFAULT_SIZE = os.terminal_size((80, 24))
_FINISHED = frozenset({AgentStatus.STOPPED, AgentStatus.EXCLUDED, AgentStatus.PRESENTED})
"""Statuses of agents with nothing more to do: shown after the others when space is short."""
_ANSWERED = frozenset({AgentStatus.ANSWERED, AgentStatus.ANSWERED_NO_VOTING})
_NAME_WIDTH = 20
_STATE_WIDTH = 24


def wants_live_status(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal that understands cursor movement."""
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):  # no such method, or a closed stream
        return False
    return terminal and os.environ.get("TERM", "") != "dumb"


def agent_state(agent: AgentView) -> str:
    """What the agent is doing, in a few words: ``thinking``, ``tool read_file``,
    ``answered agent2.1``, ``voted for agent1.1``, ``restarting``, ``failed``..."""
    status = agent.status
    if status is AgentStatus.WORKING:
        if agent.tool:
            return f"tool {agent.tool}"
        if agent.failing is not None:
            return "retrying"
        return agent.paor_status() or "thinking"
    if status in _ANSWERED:
        return f"answered {agent.answer}" if agent.answer else "answered"
    if status is AgentStatus.VOTED:
        return f"voted for {agent.vote}" if agent.vote else "voted"
    if status is AgentStatus.EXCLUDED:
        return "failed"
    if status is AgentStatus.IDLE:
        return "waiting"
    return status.value  # restarting, presenting, presented, stopped


def status_line(agent: AgentView, now: float, *, name_width: int = _NAME_WIDTH) -> str:
    """The agent's line: name, state, elapsed time, LLM calls, tokens, retries, model."""
    name = _fit(_one_line(agent.agent), name_width).ljust(name_width)
    state = _fit(_one_line(agent_state(agent)), _STATE_WIDTH).ljust(_STATE_WIDTH)
    calls = "1 LLM call " if agent.llm_calls == 1 else f"{agent.llm_calls} LLM calls"
    tokens = agent.input_tokens + agent.output_tokens
    counted = "unknown" if agent.calls_without_usage else f"{tokens:,}"
    line = f"{name} {state} {agent.elapsed(now):6.1f}s  {calls:>11}  {counted:>9} tokens"
    if agent.llm_retries:
        line += f"  {agent.llm_retries} {'retry' if agent.llm_retries == 1 else 'retries'}"
    if agent.failed_tries:
        tries = "try" if agent.failed_tries == 1 else "tries"
        line += f"  {agent.failed_tries} failed {tries}"
    if agent.model:
        line += f"  {_one_line(agent.model)}"
    return line


def status_block(view: RunView, now: float, size: os.terminal_size) -> list[str]:
    """The block for ``view`` as of ``now``: a line about the run, then one per agent, at
    most ``size.lines - 1`` lines in all (the cursor needs the last), each cut to fit the
    width so that no line wraps (a wrapped line would throw the redraw's count off).
    When agents do not all fit, those still working come first and a last line counts
    the rest."""
    room = size.lines - 1
    if room < 1 or not view.agents:
        return []
    answers, votes = len(view.answers), len(view.votes)
    elapsed = 0.0 if view.started_at is None else max(0.0, now - view.started_at)
    phase = view.phase.value.replace("_", " ")
    header = (
        f"{phase}, {elapsed:.1f}s: {answers} answer{'' if answers == 1 else 's'}, "
        f"{votes} vote{'' if votes == 1 else 's'}"
    )
    agents = list(view.agents.values())
    fits = room - 1
    more = ""
    if len(agents) > fits:
        agents.sort(key=lambda agent: agent.status in _FINISHED)  # stable: run order kept
        more = f"+{len(agents) - (fits - 1):,} more agents"
        agents = agents[: max(fits - 1, 0)]
    name_width = min(max((len(agent.agent) for agent in agents), default=1), _NAME_WIDTH)
    rows = [status_line(agent, now, name_width=name_width) for agent in agents]
    if more:
        rows.append(more)
    width = max(size.columns - 1, 1)
    # Neutralised before the cut: an escaped control character takes four columns.
    return [_fit(neutralise(line), width) for line in [header, *rows][:room]]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` terminal columns, with "…" where it was cut. Wide (East
    Asian) characters take two columns, combining marks none: counting characters would
    let a line of them wrap."""
    if len(text) <= width // 2 or _columns(text) <= width:
        return text
    used = 0
    for i, char in enumerate(text):
        used += _columns(char)
        if used > width - 1:
            return text[:i] + "…"
    return text


def _columns(text: str) -> int:
    return sum(
        0 if unicodedata.combining(char) else 2 if unicodedata.east_asian_width(char) in "WF" else 1
        for char in text
    )


class LiveStatus(TextProgress):
    """Text progress for a terminal: the timeline lines, and the live block below them.

    Event times and the redraw clock are the run's (trio's) clock. Run :meth:`animate` beside
    the run to redraw while no event arrives; without it the block moves
    only with events."""

    def __init__(
        self,
        stream: TextIO,
        *,
        verbose: bool,
        clock: RunClock,
        size: Callable[[], os.terminal_size] | None = None,
    ) -> None:
        super().__init__(stream, verbose=verbose, clock=clock)
        self._size = size or self._terminal_size
        self._drawn = 0
        """Lines of the block on the screen now, above the cursor."""
        self._last_draw = -math.inf

    async def animate(self) -> None:
        """Redraw every :data:`REDRAW_INTERVAL` until the run ends, so elapsed times move
        while the agents wait on their models; start it in the nursery the run is driven
        in. Cancelled, or at the run's end, it erases the block. A redraw that raises ends
        the ticking (the block then moves with events only): a display bug must not crash
        the run beside it."""
        try:
            while not self._ended:
                await trio.sleep(REDRAW_INTERVAL)
                try:
                    self._redraw(self.clock.now())
                except Exception:
                    return
        finally:
            self.erase()

    def record(self, event: Event) -> None:
        super().record(event)
        if self._ended:
            self.erase()  # the run is over: what follows is its result
            return
        now = self.clock.now()
        if now - self._last_draw >= REDRAW_INTERVAL:
            self._redraw(now)

    def erase(self) -> None:
        """Remove the block from the screen (the cursor goes back to where it began)."""
        if self._drawn:
            self._write(self._erasing())

    def _print(self, line: str) -> None:
        """A timeline line, written where the block was; the block comes back below it at
        the next redraw."""
        self._write(self._erasing() + line + "\n")

    def _redraw(self, now: float) -> None:
        if self._ended:
            return
        block = status_block(self.view, now, self._size())
        self._last_draw = now
        if self._write(self._erasing() + "".join(line + "\n" for line in block)):
            self._drawn = len(block)

    def _erasing(self) -> str:
        """The escape sequence that takes the cursor to the block's first line and clears
        from there down; empty when no block is drawn."""
        drawn, self._drawn = self._drawn, 0
        return f"\r\x1b[{drawn}A\x1b[J" if drawn else ""

    def _write(self, text: str) -> bool:
        """Write ``text`` if any; ``False`` if the stream failed (then stay quiet)."""
        if not text:
            return True
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # stderr went away, or was closed
            self._ended = True
            return False
        return True

    def _terminal_size(self) -> os.terminal_size:
        try:
            return os.get_terminal_size(self.stream.fileno())
        except (OSError, ValueError, AttributeError):
            return _DEFAULT_SIZE
