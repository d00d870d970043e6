"""OTP-style supervision on trio nurseries and cancel scopes.

A :class:`Supervisor` runs its children as tasks in its own nursery and is told when one
exits. What it does next follows Erlang/OTP: the child's restart type (permanent, transient,
temporary) decides *whether* to restart, the strategy (one_for_one, one_for_all,
rest_for_one) decides *what else* restarts, and the intensity (max restarts within a period)
decides when to give up and escalate: the supervisor stops everything and raises
:class:`RestartIntensityExceeded`, which its own parent sees as a crash.

A child that fails to start (an actor whose ``started()`` raised :class:`StartFailed`) is
never restarted: a restart would replay the same start. A temporary child is retired; any
other makes its supervisor escalate at once with that error (OTP: a child whose ``init``
fails fails its supervisor's start), and so on up to the root, whose
:func:`~runtime.system.open_actor_system` raises it.

Stopping is ordered: reverse start order, each child asked to stop gracefully and cancelled
if it has not finished within its ``shutdown`` timeout. A supervisor of peers that need no
order (a run's agents) may stop them all at once instead (:class:`StopOrder`, as OTP's
``simple_one_for_one`` terminates its children asynchronously): each is asked at once and
gets its own ``shutdown`` from then. A cancelled child gets
``kill_timeout`` more seconds to unwind; after that the supervisor stops waiting for it
(records it killed and carries on), because a task blocked in a worker thread that ignores
cancellation cannot be ended. trio cannot abandon a task either, so that task is reaped when
its thread returns and the nursery that owns it cannot close before then. If the supervisor
itself is cancelled (Ctrl+C), its nursery cancels every child at once; nothing is left
running.
"""

from __future__ import annotations

import enum
import math
from collections import deque
from collections.abc import Awaitable, Callable

import attrs
import trio

from conclave.runtime.errors import RestartIntensityExceeded, StartFailed
from conclave.runtime.events import (
    ChildExited,
    ChildStarted,
    ChildStopped,
    Event,
    HowStopped,
    SupervisorAction,
    SupervisorEscalated,
)

__all__ = [
    "ChildSpec",
    "Restart",
    "StopOrder",
    "StopSignal",
    "Strategy",
    "Supervisor",
    "SupervisorSpec",
]


class Strategy(enum.Enum):
    ONE_FOR_ONE = "one_for_one"
    ONE_FOR_ALL = "one_for_all"
    REST_FOR_ONE = "rest_for_one"


class Restart(enum.Enum):
    PERMANENT = "permanent"
    """Always restarted."""
    TRANSIENT = "transient"
    """Restarted only after a crash; a normal exit retires it."""
    TEMPORARY = "temporary"
    """Never restarted."""


class StopOrder(enum.Enum):
    """How a supervisor stops its children when it stops."""

    REVERSE_START = "reverse_start"
    """One at a time, the last started first: a child may rely on those started before it."""
    ALL_AT_ONCE = "all_at_once"
    """Every child asked to stop at once, for peers that rely on none of the others: their
    teardowns overlap, and stopping a thousand agents takes a few scheduler passes, not
    three per agent (90 ms of a 1,000-agent run's CPU one at a time; issue 24)."""


@attrs.frozen(kw_only=True)
class SupervisorSpec:
    strategy: Strategy = Strategy.ONE_FOR_ONE
    intensity: int = attrs.field(default=3, validator=attrs.validators.ge(0))
    """Restarts allowed within ``period`` seconds; one more escalates."""
    period: float = attrs.field(default=5.0, validator=attrs.validators.gt(0))
    stop_order: StopOrder = StopOrder.REVERSE_START


class StopSignal:
    """Asks a running child to finish. Children register how to be woken."""

    __slots__ = ("_callbacks", "requested")

    def __init__(self) -> None:
        self.requested = False
        self._callbacks: list[Callable[[], None]] = []

    def on_request(self, callback: Callable[[], None]) -> None:
        if self.requested:
            callback()
        else:
            self._callbacks.append(callback)

    def request(self) -> None:
        if self.requested:
            return
        self.requested = True
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()


ChildRun = Callable[[StopSignal, int], Awaitable[None]]
"""Runs one incarnation of a child until it finishes; gets its stop signal and incarnation."""


@attrs.frozen(kw_only=True)
class ChildSpec:
    id: str
    run: ChildRun
    restart: Restart = Restart.PERMANENT
    shutdown: float = attrs.field(default=5.0, validator=attrs.validators.ge(0))
    """Seconds a graceful stop may take before the child is cancelled (``math.inf``: wait)."""
    kill_timeout: float = attrs.field(default=5.0, validator=attrs.validators.ge(0))
    """Seconds a cancelled child may take to unwind (an actor's teardown hooks run within
    it) before the supervisor abandons it. A stop takes at most ``shutdown + kill_timeout``."""
    retire: Callable[[], None] | None = None
    """Called once when the child leaves the supervisor for good (not on restarts)."""


class _Run:
    """One incarnation of a child: how to stop it, and how it ended."""

    __slots__ = ("done", "error", "number", "scope", "stop")

    def __init__(self, number: int) -> None:
        self.number = number
        self.stop = StopSignal()
        self.scope = trio.CancelScope()
        self.done = trio.Event()
        self.error: Exception | None = None


class _Child:
    __slots__ = ("retired", "run", "spec", "stopping")

    def __init__(self, spec: ChildSpec) -> None:
        self.spec = spec
        self.run = _Run(0)
        self.stopping = False
        self.retired = False


@attrs.frozen
class _Exited:
    child: _Child
    run: _Run


@attrs.frozen
class _StartRequest:
    spec: ChildSpec


@attrs.frozen
class _TerminateRequest:
    child_id: str
    done: trio.Event


class _Shutdown:
    pass


_Control = _Exited | _StartRequest | _TerminateRequest | _Shutdown


class Supervisor:
    """Supervises children under a :class:`SupervisorSpec`; see the module docstring."""

    def __init__(
        self,
        name: str,
        spec: SupervisorSpec,
        *,
        record: Callable[[Event], None] | None = None,
    ) -> None:
        self.name = name
        self.spec = spec
        self._record = record
        self._children: list[_Child] = []
        self._ids: set[str] = set()
        """Ids of children started or queued to start: the duplicate check stays O(1) when a
        run spawns ten thousand agents."""
        self._restarts: deque[float] = deque()
        self._control_send: trio.MemorySendChannel[_Control]
        self._control_receive: trio.MemoryReceiveChannel[_Control]
        self._control_send, self._control_receive = trio.open_memory_channel(math.inf)
        self._nursery: trio.Nursery | None = None
        self._queued_starts = 0
        self.restart_count = 0
        """Restarts this supervisor made (not its nested supervisors'; the system sums those)."""

    def which_children(self) -> list[str]:
        """Ids of current children in start order."""
        return [c.spec.id for c in self._children]

    def start_child(self, spec: ChildSpec) -> None:
        """Add and start a child. Safe from any task; ordering is preserved."""
        if spec.id in self._ids:
            raise ValueError(f"supervisor {self.name} already has a child {spec.id!r}")
        self._ids.add(spec.id)
        if self._nursery is None or self._queued_starts:
            # Behind requests still queued (made before the supervisor ran), not ahead.
            self._queued_starts += 1
            self._control_send.send_nowait(_StartRequest(spec))
            return
        self._launch(_Child(spec), first=True)

    def retire_children(self) -> None:
        """Retire every child, and every child still waiting to start, for good.

        A nested supervisor's :attr:`ChildSpec.retire`: when it leaves its parent for good,
        so does its subtree, and each actor's address is freed.
        """
        for child in list(self._children):
            self._retire(child)
        while True:
            try:
                item = self._control_receive.receive_nowait()
            except trio.WouldBlock:
                return
            if isinstance(item, _StartRequest):
                self._queued_starts -= 1
                self._ids.discard(item.spec.id)
                if item.spec.retire is not None:
                    item.spec.retire()

    def release(self) -> None:
        """Forget every child and every queued request, and stop recording: called once the
        system that owns this supervisor has shut down for good. Children's specs close over
        the system (which holds this supervisor) and over their actors' state; released,
        a run's whole tree is freed by reference counting as soon as it is dropped, rather than
        left in cycles for the garbage collector (0.5-0.75 s per pass in a process that had
        run ten 1,000-agent runs)."""
        self._children.clear()
        self._record = None
        while True:
            try:
                self._control_receive.receive_nowait()
            except trio.WouldBlock:
                return

    async def terminate_child(self, child_id: str) -> None:
        """Stop a child gracefully (within its shutdown timeout) and forget it."""
        done = trio.Event()
        self._control_send.send_nowait(_TerminateRequest(child_id, done))
        await done.wait()

    async def run(self, stop: StopSignal, incarnation: int = 1) -> None:
        """Supervise until ``stop`` is requested; raises on escalation.

        A restarted supervisor starts afresh, as in OTP: its restart history is forgotten and
        the children it stopped when it escalated are started again (temporary ones retire).
        """
        stop.on_request(lambda: self._control_send.send_nowait(_Shutdown()))
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._restarts.clear()
            for child in list(self._children):
                if child.spec.restart is Restart.TEMPORARY:
                    self._retire(child)
                else:
                    self._launch(child, first=False)
            try:
                await self._supervise()
            finally:
                self._nursery = None
                await self._stop_children(list(self._children))

    async def _supervise(self) -> None:
        async for item in self._control_receive:
            if isinstance(item, _Shutdown):
                return
            if isinstance(item, _StartRequest):
                self._queued_starts -= 1
                self._launch(_Child(item.spec), first=True)
            elif isinstance(item, _TerminateRequest):
                await self._terminate(item)
            elif item.run is item.child.run and not item.child.stopping and not item.child.retired:
                # A child terminated while its crash was on its way here has left already.
                await self._on_exit(item.child, item.run.error)

    async def _terminate(self, request: _TerminateRequest) -> None:
        for child in self._children:
            if child.spec.id == request.child_id:
                await self._stop_children([child])
                self._retire(child)
                break
        request.done.set()

    def _launch(self, child: _Child, *, first: bool) -> None:
        assert self._nursery is not None
        if first:
            self._children.append(child)
        run = child.run = _Run(child.run.number + 1)
        child.stopping = False
        self._emit(
            ChildStarted(
                at=trio.current_time(),
                supervisor=self.name,
                child=child.spec.id,
                incarnation=run.number,
            )
        )
        self._nursery.start_soon(self._run_child, child, run)

    async def _run_child(self, child: _Child, run: _Run) -> None:
        # ``run``, not ``child.run``: an abandoned incarnation may end after its successor
        # started, and must not report itself as the successor.
        try:
            with run.scope:
                await child.spec.run(run.stop, run.number)
        except Exception as exc:
            run.error = _unwrap(exc)
        finally:
            run.done.set()
        self._control_send.send_nowait(_Exited(child, run))

    async def _on_exit(self, child: _Child, error: Exception | None) -> None:
        restart = child.spec.restart is Restart.PERMANENT or (
            child.spec.restart is Restart.TRANSIENT and error is not None
        )
        reason = None if error is None else f"{type(error).__name__}: {error}"
        if not restart:
            self._emit(self._exited(child, reason, SupervisorAction.RETIRE))
            self._retire(child)
            return
        if isinstance(error, StartFailed):
            self._emit(self._exited(child, reason, SupervisorAction.ESCALATE))
            self._emit(
                SupervisorEscalated(at=trio.current_time(), supervisor=self.name, error=str(error))
            )
            raise error
        if self._intensity_exceeded():
            self._emit(self._exited(child, reason, SupervisorAction.ESCALATE))
            exc = RestartIntensityExceeded(self.name, self.spec.intensity, self.spec.period, error)
            self._emit(
                SupervisorEscalated(at=trio.current_time(), supervisor=self.name, error=str(exc))
            )
            raise exc
        self._emit(self._exited(child, reason, SupervisorAction.RESTART))
        self.restart_count += 1
        index = self._children.index(child)
        if self.spec.strategy is Strategy.ONE_FOR_ONE:
            siblings: list[_Child] = []
        elif self.spec.strategy is Strategy.ONE_FOR_ALL:
            siblings = [c for c in self._children if c is not child]
        else:
            siblings = self._children[index + 1 :]
        await self._stop_children(siblings)
        for sibling in siblings:
            if sibling.spec.restart is Restart.TEMPORARY:
                self._retire(sibling)
        for candidate in list(self._children):
            if candidate is child or candidate in siblings:
                self._launch(candidate, first=False)

    def _intensity_exceeded(self) -> bool:
        now = trio.current_time()
        self._restarts.append(now)
        while self._restarts and self._restarts[0] < now - self.spec.period:
            self._restarts.popleft()
        return len(self._restarts) > self.spec.intensity

    async def _stop_children(self, children: list[_Child]) -> None:
        """Stop in reverse start order; each gets its shutdown timeout, then is cancelled and
        gets its kill timeout to unwind, then is abandoned (see the module docstring)."""
        if self.spec.stop_order is StopOrder.ALL_AT_ONCE:
            await self._stop_all_at_once(children)
            return
        for child in reversed(children):
            run = child.run
            if run.done.is_set():
                continue
            child.stopping = True
            run.stop.request()
            killed = not await _ended_by(run, trio.current_time() + child.spec.shutdown)
            if killed:
                run.scope.cancel()
                await _ended_by(run, trio.current_time() + child.spec.kill_timeout)
            self._emit(self._stopped(child, killed=killed))

    async def _stop_all_at_once(self, children: list[_Child]) -> None:
        """Ask every running child to stop at once; cancel those still running when their
        own shutdown timeout has passed, and abandon those still running their kill timeout
        after that. Each is recorded stopped in reverse start order, as one at a time."""
        running = [child for child in reversed(children) if not child.run.done.is_set()]
        asked = trio.current_time()
        for child in running:
            child.stopping = True
            child.run.stop.request()
        killed: set[_Child] = set()
        for child in running:
            if not await _ended_by(child.run, asked + child.spec.shutdown):
                killed.add(child)
                child.run.scope.cancel()
        cancelled = trio.current_time()
        for child in running:
            if child in killed:
                await _ended_by(child.run, cancelled + child.spec.kill_timeout)
        for child in running:
            self._emit(self._stopped(child, killed=child in killed))

    def _stopped(self, child: _Child, *, killed: bool) -> ChildStopped:
        how = HowStopped.KILLED if killed else HowStopped.GRACEFUL
        error = None
        if child.run.error is not None:
            how = HowStopped.CRASHED
            error = f"{type(child.run.error).__name__}: {child.run.error}"
        return ChildStopped(
            at=trio.current_time(), supervisor=self.name, child=child.spec.id, how=how, error=error
        )

    def _retire(self, child: _Child) -> None:
        child.retired = True
        if child in self._children:
            self._children.remove(child)
        self._ids.discard(child.spec.id)
        if child.spec.retire is not None:
            child.spec.retire()

    def _exited(self, child: _Child, reason: str | None, action: SupervisorAction) -> ChildExited:
        return ChildExited(
            at=trio.current_time(),
            supervisor=self.name,
            child=child.spec.id,
            error=reason,
            action=action,
        )

    def _emit(self, event: Event) -> None:
        if self._record is not None:
            self._record(event)


async def _ended_by(run: _Run, deadline: float) -> bool:
    """Whether ``run`` ends by ``deadline``; no checkpoint if it already has (a thousand
    stopped children would cost a thousand scheduler passes)."""
    if not run.done.is_set():
        with trio.move_on_at(deadline):
            await run.done.wait()
    return run.done.is_set()


def _unwrap(exc: Exception) -> Exception:
    """A nursery wraps a lone crash in an ExceptionGroup; report the crash itself."""
    while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc
