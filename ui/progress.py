"""A run's progress as it happens: timeline lines of text, or stream-json lines.

Shared by the front ends: a headless run prints either (text on stderr, stream-json on
stdout; :func:`ui.headless.command.make_progress` picks one), and ``conclave serve`` sends
each run's stream-json lines to its clients.

Both renderers are synchronous subscribers of the run's :class:`~actors.events.EventHub`:
output to a terminal or a pipe is the run's own output, so it is written as events happen
and in full, never dropped. stream-json is specified in ``docs/stream-json.md``; its
schema test is ``tests/cli/test_stream_json.py``.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import os
import re
import secrets
import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, TextIO

import trio

from conclave.actors.coordination.events import RunStarted
from conclave.actors.coordination.state import CoordinationState
from conclave.actors.events import DomainEvent, SubscriberDropped
from conclave.actors.run.driver import RunSpec
from conclave.actors.run.events import RunEnded
from conclave.actors.run.lineage import run_id as lineage_run_id
from conclave.actors.run.result import RunResult
from conclave.runtime import (
    ChildExited,
    ChildStopped,
    DeadLetter,
    Event,
    Held,
    LogOpened,
    Released,
    TapFailed,
    converter,
    encode,
)

if TYPE_CHECKING:
    from conclave.actors.events.view import RunView

# The run view and the timeline (and the event classes it names) are imported by the text
# renderer when it is made: ``--output-format json`` and ``stream-json`` runs do not load
# them before their first request (issue 24: start-up).

__all__ = [
    "RunClock",
    "RunProgress",
    "Silent",
    "StreamJson",
    "TextProgress",
    "json_line",
    "run_id_of",
]

_NOTHING: Mapping[str, Any] = MappingProxyType({})


class RunProgress(Protocol):
    """What a front end needs of a renderer."""

    @property
    def kinds(self) -> tuple[type[Event], ...]:
        """The event classes to subscribe it to."""
        ...

    def record(self, event: Event) -> None: ...

    def finish(self, result: RunResult, *, extra: Mapping[str, Any] = _NOTHING) -> None:
        """The run is over and ``result`` is what it returned: write the last of it.
        ``extra`` is added to the result's fields (a plan-mode run's plan fields)."""
        ...

    async def animate(self) -> None:
        """Redraw while no event arrives, until the run ends (run it beside the run);
        renderers that move only with events return at once."""
        ...


def run_id_of(spec: RunSpec) -> str:
    """The name of the run's log directory (``.conclave/runs/<run_id>``), so a stream and
    its log are found from each other (a resumed run's behind its paused run's:
    :func:`~actors.run.lineage.run_id`); a random id for a run without a log."""
    return lineage_run_id(spec.log_dir) if spec.log_dir is not None else secrets.token_hex(6)


class RunClock:
    """Turns event times (trio's clock, arbitrary origin) into seconds since the run started
    and wall-clock times. It starts when made; the run's ``log_opened`` event, the first a
    run records, moves the origin to the log's so the stream's times match the log's."""

    def __init__(self) -> None:
        self.origin = trio.current_time()
        self.wall = time.time()

    def adopt(self, opened: LogOpened) -> None:
        self.origin = opened.at
        self.wall = opened.wall_time

    def now(self) -> float:
        """The current time on the run's clock; outside trio (the run is over), the wall
        clock's advance since the origin stands in for it."""
        try:
            return trio.current_time()
        except RuntimeError:
            return self.origin + (time.time() - self.wall)

    def t(self, at: float) -> float:
        return round(at - self.origin, 6)

    def iso(self, at: float) -> str:
        moment = datetime.datetime.fromtimestamp(self.wall + (at - self.origin), datetime.UTC)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Silent:
    """``--output-format json`` without ``--verbose``: nothing until the result."""

    kinds: tuple[type[Event], ...] = ()

    def record(self, event: Event) -> None:
        """Never called: it subscribes to nothing."""

    async def animate(self) -> None:
        """Nothing to animate: it moves with events only."""

    def finish(self, result: RunResult, *, extra: Mapping[str, Any] = _NOTHING) -> None:
        """The result is printed by :func:`ui.headless.result.print_result`."""


# ---------------------------------------------------------------------------- text


class TextProgress:
    """One line per event on stderr, ``[  1.23s] what happened``: the lines replay prints,
    and a line when something watching the run fails (a tap, a subscriber).

    It keeps a :class:`RunView` of the run; with ``--verbose`` it prints the agents' table
    from it when the run ends (as replay does). Falls silent after ``run_ended`` (shutdown
    chatter is in the log, not the terminal) and when stderr goes away.
    """

    def __init__(self, stream: TextIO, *, verbose: bool, clock: RunClock) -> None:
        from conclave.actors.events.view import RunView
        from conclave.ui import timeline

        self.timeline = timeline
        self.stream = stream
        self.verbose = verbose
        self.clock = clock
        self.view: RunView = RunView()
        self._ended = False
        detail: tuple[type[Event], ...] = (Held, Released) if verbose else ()
        # The kernel events replay shows (``describe`` picks the crashes among them).
        kernel = (DeadLetter, ChildExited, ChildStopped, TapFailed)
        self.kinds = (DomainEvent, LogOpened, SubscriberDropped, *kernel, *detail)

    def record(self, event: Event) -> None:
        if self._ended:
            return
        if isinstance(event, LogOpened):
            self.clock.adopt(event)
            return
        self.view.apply(event)
        line = self.timeline.describe(event, verbose=self.verbose) or _watcher_line(event)
        line = line or self.timeline.usage_unknown(event, self.view)
        if line is not None:
            self._print(f"[{self.clock.t(event.at):6.2f}s] {line}")
        if isinstance(event, RunEnded):
            self._ended = True
            if self.verbose:
                for row in self.timeline.agent_table(self.view):
                    self._print(row)

    def _print(self, line: str) -> None:
        try:
            print(line, file=self.stream, flush=True)
        except BrokenPipeError:
            self._ended = True

    async def animate(self) -> None:
        """Nothing to animate: it moves with events only."""

    def finish(self, result: RunResult, *, extra: Mapping[str, Any] = _NOTHING) -> None:
        """The summary is printed by :func:`ui.headless.result.print_result`."""


def _watcher_line(event: Event) -> str | None:
    """A line for a subscriber that was dropped; the run went on. (A failed tap is a
    timeline line: replay shows it too.)"""
    if not isinstance(event, SubscriberDropped):
        return None
    from conclave.ui.timeline import neutralise

    line = f"watcher {event.subscriber} dropped ({event.cause.value}): {event.detail}"
    return neutralise(" ".join(line.split()))  # a detail may span lines


# ---------------------------------------------------------------------------- stream-json

_LINE_BREAKING = re.compile("[\x85\u2028\u2029\ud800-\udfff]")
"""What ``json.dumps(ensure_ascii=False)`` leaves raw but a line splitter may break on (NEL,
LINE SEPARATOR, PARAGRAPH SEPARATOR: ``str.splitlines`` and JavaScript do), or an encoder
may refuse (lone surrogates, from undecodable bytes in argv or a file)."""


def json_line(record: dict[str, Any]) -> str:
    """``record`` as one line of JSON (no newline): UTF-8 text, with every character that
    could split the line or fail to encode written as a ``\\uXXXX`` escape."""
    return _LINE_BREAKING.sub(
        lambda m: f"\\u{ord(m.group()):04x}", json.dumps(record, ensure_ascii=False)
    )


class StreamJson:
    """Writes the run as stream-json: ``run_started``, the run's domain events, ``result``.

    Every line starts with ``type``, ``run_id``, ``seq`` (0, 1, 2... with no gap), ``t``
    and ``time``; see ``docs/stream-json.md``. ``run_started`` is written when the
    coordinator records it, merged with the settings in ``spec``; anything recorded before
    it waits (normally nothing: agents start when the coordinator tells them).
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        spec: RunSpec,
        run_id: str,
        include_partial: bool,
        clock: RunClock,
    ) -> None:
        self.stream = stream
        self.spec = spec
        self.run_id = run_id
        self.include_partial = include_partial
        self.clock = clock
        self.kinds: tuple[type[Event], ...] = (DomainEvent, LogOpened)
        self.seq = 0
        self._started = False
        self._ended = False
        self._broken = False
        self._waiting: list[DomainEvent] = []
        self._last_at = clock.origin

    def record(self, event: Event) -> None:
        if self._ended or self._broken:
            return
        if isinstance(event, LogOpened):
            if not self._started:
                self.clock.adopt(event)
            return
        if not isinstance(event, DomainEvent) or (event.ephemeral and not self.include_partial):
            return
        if isinstance(event, RunStarted):
            if not self._started:
                self._start(event)
            return  # a restarted coordinator does not start the run twice
        if not self._started:
            self._waiting.append(event)
            return
        self._event(event)

    def _start(self, started: RunStarted) -> None:
        self._started = True
        waiting, self._waiting = self._waiting, []
        # Dated no later than what waited for it, so that ``t`` never decreases.
        at = min([started.at, *(event.at for event in waiting)])
        self._write("run_started", at, self._run_started_fields(started))
        for event in waiting:
            self._event(event)

    def _run_started_fields(self, started: RunStarted) -> dict[str, Any]:
        config = self.spec.config
        anonymous = dict(zip(started.agents, started.anonymous_ids, strict=False))
        return {
            "task": started.task,
            "agents": [
                {
                    "id": agent.id,
                    "anonymous_id": anonymous.get(agent.id),
                    "backend": agent.backend.type,
                }
                for agent in config.agents
            ],
            "strategy": started.strategy.value,
            "orchestrator": converter.unstructure(config.orchestrator),
        }

    def _event(self, event: DomainEvent) -> None:
        if self._ended:
            return
        data = encode(event)
        del data["kind"], data["at"]
        self._write(event.kind, event.at, data)
        self._ended = isinstance(event, RunEnded)

    async def animate(self) -> None:
        """Nothing to animate: it moves with events only."""

    def finish(self, result: RunResult, *, extra: Mapping[str, Any] = _NOTHING) -> None:
        """Write the ``result`` line, the last. If the run stopped before the coordinator
        recorded ``run_started`` (Ctrl+C at once), ``run_started`` is made from the spec so
        the stream's shape holds."""
        if self._broken:
            return
        # Never before the last line: a test's virtual clock may run ahead of the wall's.
        now = max(self.clock.now(), self._last_at)
        if not self._started:
            state = CoordinationState(
                task=self.spec.task,
                agents=[a.id for a in self.spec.config.agents],
                orchestrator=self.spec.config.orchestrator,
            )
            self._start(
                RunStarted(
                    at=now,
                    task=state.task,
                    agents=tuple(state.agents),
                    anonymous_ids=tuple(state.anonymous[a] for a in state.agents),
                    strategy=state.orchestrator.final_answer_strategy,
                )
            )
        self._ended = True
        self._write("result", now, result.to_json() | dict(extra))

    def _write(self, kind: str, at: float, fields: dict[str, Any]) -> None:
        if self._broken:
            return
        record = {
            "type": kind,
            "run_id": self.run_id,
            "seq": self.seq,
            "t": self.clock.t(at),
            "time": self.clock.iso(at),
            **fields,
        }
        self.seq += 1
        self._last_at = at
        try:
            self.stream.write(json_line(record) + "\n")
            self.stream.flush()
        except BrokenPipeError:
            # The reader left (``| head``): the run goes on, quietly, to its own exit code.
            self._broken = True
            _discard(self.stream)


def _discard(stream: TextIO) -> None:
    """Point ``stream``'s file at /dev/null, so the lines still buffered in it are not
    written (and fail) again when Python flushes it at exit."""
    with contextlib.suppress(OSError, ValueError, AttributeError, io.UnsupportedOperation):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
