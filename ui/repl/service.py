"""The REPL's trio side: one service for the whole session.

It owns what outlives a turn — the backend pool (connections stay warm), the event hub, the
current run and the conversation's history — and takes commands from the UI through a
memory channel that the UI feeds with ``trio_token.run_sync_soon(send.send_nowait, ...)``.
It never waits for the UI: it writes :class:`~ui.repl.state.ReplState` and asks for a
redraw, and prompt-toolkit coalesces those into at most one frame per ~50 ms.

One run at a time. A turn submitted while a run executes is queued and sent when it ends.
Cancelling a run keeps its partial result (shown, and kept in history if it has an answer)
and drops the queued turns. :class:`Quit` cancels any run and returns only once its event
log is closed.

The override window: the service's gate tells the UI the vote is over (the run's timer is
paused meanwhile) and waits; the person's choice reaches the coordinator through
:meth:`RunHandle.override` or :meth:`RunHandle.continue_`, whose verdict says whether it was
taken.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Protocol

import attrs
import trio
from prompt_toolkit.formatted_text import StyleAndTextTuples

from conclave.actors.events import DomainEvent, EventHub
from conclave.actors.events.view import RunView
from conclave.actors.human.gate import OverrideChoice, OverrideRequest
from conclave.actors.human.questions import QuestionGate
from conclave.actors.interactive.project import keep_in_project
from conclave.actors.llm.pool import BackendPool, open_backends
from conclave.actors.llm.protocol import LLMBackend
from conclave.actors.mcp.session import McpSession, open_session_servers
from conclave.actors.run.driver import RunHandle, RunSpec, drive
from conclave.actors.run.events import SandboxOpened
from conclave.actors.run.result import RunResult, Termination
from conclave.actors.run.turn import Turn
from conclave.config.modes import CollaborationMode, UnknownAgent
from conclave.config.problems import ConfigError
from conclave.config.resolver import ResolvedConfig
from conclave.config.schema import AgentConfig
from conclave.runtime import ConclaveRuntimeError
from conclave.ui.repl.plan_dialog import PlanDecision
from conclave.ui.repl.protocol import (
    Cancel,
    ClearHistory,
    Command,
    Compact,
    Continue,
    Override,
    Quit,
    Resume,
    Submit,
)
from conclave.ui.repl.render import answer_block
from conclave.ui.repl.state import OverrideRow, OverrideWindow, ReplState
from conclave.ui.text import display_path
from conclave.ui.timeline import describe

__all__ = [
    "InteractiveHook",
    "PlanHook",
    "Printer",
    "ReplService",
    "SessionHook",
    "open_repl_service",
]

TICK = 0.1
"""How often the run's elapsed time is read for the screen while a run executes."""


class Printer(Protocol):
    def __call__(self, block: StyleAndTextTuples, /) -> None:
        """Print ``block`` above the prompt, in order."""
        ...


class PlanHook(Protocol):
    """What happens after a plan-mode turn (the plan approval flow, :mod:`ui.repl.planning`)."""

    def shown(self, result: RunResult) -> str | None:
        """A plan-mode turn's answer as the screen shows it (a plan, readably), or ``None``
        to show it as it is."""
        ...

    def turn_ended(self, submit: Submit, result: RunResult, log_dir: Path | None) -> None:
        """Called once per plan-mode turn, after its result is shown."""
        ...


class InteractiveHook(Protocol):
    """Where turns go when the interactive agent is on (:mod:`ui.repl.interactive`)."""

    async def turn(self, submit: Submit) -> None:
        """Carry out ``submit`` as a turn of the interactive agent."""
        ...

    def cancel(self) -> None:
        """Ctrl+C with no run executing: end the agent's turn now."""
        ...


class SessionHook(Protocol):
    """What records the conversation in a session (:mod:`ui.repl.sessions`)."""

    def turn_started(self, submit: Submit) -> None:
        """``submit`` is about to run: its turn is recorded first (a crash keeps it)."""
        ...

    def saw(self, event: DomainEvent) -> None:
        """An event of the running run (the last call's input tokens are read from these)."""
        ...

    def turn_ended(self, submit: Submit, result: RunResult) -> None: ...

    def run_launched(self, result: RunResult) -> None:
        """A run the interactive agent launched in the current turn (the turn stays open)."""
        ...

    def replied(self, text: str, *, input_tokens: int | None) -> None:
        """The interactive agent's reply ends the current turn."""
        ...

    async def after_turn(self) -> None:
        """Between turns: compact if due."""
        ...

    async def compact(self, instructions: str) -> None:
        """``/compact``: summarise the older exchanges now."""
        ...

    def resume(self, session_id: str) -> None:
        """Go on with another session: its history and modes replace these."""
        ...

    def cleared(self) -> None:
        """``/clear``: the next turn starts a new session."""
        ...

    def plan_proposed(self, plan: str, *, run_id: str) -> None:
        """A planning turn's plan (as JSON): the session's next plan version."""
        ...

    def plan_decided(self, decision: PlanDecision) -> None:
        """What the person decided about the latest plan version."""
        ...


class _WindowGate:
    """The REPL's human gate: tells the service the override window opened, then waits
    until the run handle's decision (or the run's end) cancels it."""

    def __init__(self, service: ReplService) -> None:
        self._service = service

    async def override(self, request: OverrideRequest) -> OverrideChoice:
        self._service._window_opened(request)
        try:
            await trio.sleep_forever()
        finally:
            self._service._window_closed()


class ReplService:
    """See the module docstring. Build it with :func:`open_repl_service`."""

    def __init__(
        self,
        *,
        resolved: ResolvedConfig,
        state: ReplState,
        printer: Printer,
        log_root: Path | None,
        backends: BackendPool,
        hub: EventHub,
        mcp: McpSession | None = None,
        backend_factory: Callable[[AgentConfig], LLMBackend] | None = None,
    ) -> None:
        self.resolved = resolved
        """The session's config before any mode; each turn finishes it for its modes."""
        self.state = state
        self.plans: PlanHook | None = None
        self.questions: QuestionGate | None = None
        """Who answers the agents' questions (the question card); ``None``: runs take none."""
        self.interactive: InteractiveHook | None = None
        """With ``orchestrator.interactive_mode`` on, each turn goes to the agent."""
        self.sessions: SessionHook | None = None
        self._print = printer
        self._log_root = log_root
        self._backends = backends
        self._hub = hub
        self._mcp = mcp
        self._backend_factory = backend_factory
        self._handle: RunHandle | None = None
        self._cancel_asked = False
        """Cancel came before the run's handle: the run is cancelled as soon as it opens."""
        self._queue: list[Submit] = []
        self._nursery: trio.Nursery | None = None
        self._idle = trio.Event()
        self._idle.set()

    @property
    def backends(self) -> BackendPool:
        """The session's pool (the interactive agent's backend comes from it too)."""
        return self._backends

    @property
    def mcp(self) -> McpSession | None:
        return self._mcp

    @property
    def log_root(self) -> Path | None:
        return self._log_root

    @property
    def backend_factory(self) -> Callable[[AgentConfig], LLMBackend] | None:
        return self._backend_factory

    def print(self, block: StyleAndTextTuples) -> None:
        """Print ``block`` above the prompt."""
        self._print(block)

    async def backend_for(self, agent: AgentConfig) -> LLMBackend:
        """``agent``'s backend, from the session's pool (warm connections), for calls made
        outside a run (a compaction's summary)."""
        if self._backend_factory is not None:
            return self._backend_factory(agent)
        return await self._backends.backend(agent)

    # -- commands ---------------------------------------------------------------------------

    async def serve(self, commands: trio.MemoryReceiveChannel[Command]) -> None:
        """Carry out commands until :class:`Quit` (or the channel closes); then cancel any
        run and return once it has concluded (its log closed). Cancelling ``serve`` itself
        ends a running run as cancelled too (``drive`` concludes it on the way out), without
        waiting for anything else."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            async for command in commands:
                if isinstance(command, Quit):
                    break
                self.handle(command)
            self._cancel()
            await self._idle.wait()
            nursery.cancel_scope.cancel()

    def handle(self, command: Command) -> None:
        """Carry out one command now (synchronously; slow work goes to the nursery)."""
        if isinstance(command, Submit):
            self._submit(command)
        elif isinstance(command, Cancel):
            self._cancel()
        elif isinstance(command, Override | Continue):
            handle = self._handle
            if handle is None or self.state.override is None:
                self.state.tell("no vote is waiting for a decision")
                return
            assert self._nursery is not None
            self._nursery.start_soon(self._decide, handle, command)
        elif isinstance(command, ClearHistory):
            self.state.history.clear()
            if self.sessions is not None:
                self.sessions.cleared()
        elif isinstance(command, Compact | Resume):
            self._session_command(command)

    def _session_command(self, command: Compact | Resume) -> None:
        """``/compact`` and ``/resume`` wait for no run: they change the history a run uses."""
        sessions = self.sessions
        if sessions is None:
            self.state.tell("this REPL keeps no session")
            return
        if self.state.running:
            what = "/compact" if isinstance(command, Compact) else "/resume"
            self.state.tell(f"{what} works between runs; wait for this one to end")
            return
        if isinstance(command, Resume):
            sessions.resume(command.session_id)
            return
        assert self._nursery is not None
        self._idle = trio.Event()
        self.state.running = True
        self.state.status = "Compacting"
        self.state.on_change()
        self._nursery.start_soon(self._compact, sessions, command.instructions)

    async def _compact(self, sessions: SessionHook, instructions: str) -> None:
        try:
            await sessions.compact(instructions)
        finally:
            self.state.running = False
            self.state.status = ""
            self._idle.set()
            self.state.on_change()

    def _submit(self, submit: Submit) -> None:
        if self.state.running:
            self._queue.append(submit)
            self.state.queued.append(submit.shown_task or submit.task)
            self.state.on_change()
            return
        assert self._nursery is not None
        self._idle = trio.Event()
        self._started(submit)
        self._nursery.start_soon(self._turns, submit)

    def _started(self, submit: Submit) -> None:
        """The screen shows ``submit`` as running from the moment it is taken (and a cancel
        from then on is for it)."""
        self._cancel_asked = False
        self.state.running = True
        self.state.status = submit.status or _STATUS[submit.modes.collaboration]
        self.state.on_change()

    def _cancel(self) -> None:
        dropped = len(self._queue)
        self._queue.clear()
        self.state.queued.clear()
        if dropped:
            self._print([("class:notice", f"{dropped} queued turn(s) dropped\n")])
        if not self.state.running:
            return
        self.state.tell("cancelling the run")
        if self._handle is not None:
            self._handle.cancel()
        elif self.interactive is not None:
            self.interactive.cancel()
        else:
            self._cancel_asked = True

    async def _decide(self, handle: RunHandle, command: Override | Continue) -> None:
        """Tell the coordinator; the run may end first (a cancel), and then nobody answers."""
        try:
            if isinstance(command, Override):
                verdict = await handle.override(command.agent)
            else:
                verdict = await handle.continue_()
        except ConclaveRuntimeError:
            self.state.tell("the run ended before the decision reached it")
            return
        if not verdict.accepted:
            self.state.tell(f"the decision was not taken: {verdict.error or 'the vote is over'}")

    # -- turns ------------------------------------------------------------------------------

    async def _turns(self, submit: Submit | None) -> None:
        """Run ``submit``, then each queued turn, one at a time."""
        try:
            while submit is not None:
                await self._turn(submit)
                if self.sessions is not None:
                    await self.sessions.after_turn()
                submit = self._queue.pop(0) if self._queue else None
                if submit is not None:
                    self.state.queued.pop(0)
                    self._started(submit)
        finally:
            self.state.running = False
            self.state.status = ""
            self._idle.set()
            self.state.on_change()

    async def _turn(self, submit: Submit) -> None:
        state = self.state
        shown = submit.shown_task or submit.task
        self._print([("class:prompt", "> "), ("class:user", shown + "\n")])
        if self.interactive is not None:
            await self.interactive.turn(submit)
            return
        try:
            config = self.resolved.for_modes(submit.modes)
        except (UnknownAgent, ConfigError) as exc:
            self._print([("class:error", f"cannot run: {exc}\n")])
            return
        log_dir = self._new_log_dir()
        sessions = self.sessions
        if sessions is not None:
            sessions.turn_started(submit)
        spec = RunSpec(
            task=submit.task,
            config=config,
            mode=submit.modes.collaboration,
            history=tuple(state.history),
            log_dir=log_dir,
            backends=self._backends,
            mcp=self._mcp,
            backend_factory=self._backend_factory,
        )
        result = await self.drive_run(spec)
        if result is not None:
            self._finished(submit, result, log_dir)

    async def drive_run(self, spec: RunSpec) -> RunResult | None:
        """Run ``spec`` on screen (its view, its elapsed time, Ctrl+C and the override window
        for it) and return its result; ``None`` when it could not start (said on screen)."""
        state, sessions = self.state, self.sessions
        if spec.human is None:
            spec = attrs.evolve(spec, human=_WindowGate(self))
        if spec.questions is None and self.questions is not None:
            spec = attrs.evolve(spec, questions=self.questions)
        view = RunView()
        state.view = view
        state.elapsed = 0.0
        state.last_log_dir = spec.log_dir
        state.on_change()

        def seen(event: DomainEvent) -> None:
            view.apply(event)
            if sessions is not None:
                sessions.saw(event)
            if isinstance(event, SandboxOpened) and event.warning is not None:
                self._print([("class:error", f"{describe(event)}\n")])  # unconfined, say so
            state.on_change()

        try:
            with self._hub.subscribe_sync(seen, name="repl"):
                async with trio.open_nursery() as ticking:
                    ticking.start_soon(self._tick)
                    try:
                        result = await drive(spec, self._hub, on_open=self._opened)
                    finally:
                        ticking.cancel_scope.cancel()
        except Exception as exc:  # the log could not be created: nothing ran
            self._print([("class:error", f"the run could not start: {exc}\n")])
            return None
        finally:
            self._handle = None
            state.override = None
        return result

    def _opened(self, handle: RunHandle) -> None:
        self._handle = handle
        if self._cancel_asked:
            handle.cancel()

    async def _tick(self) -> None:
        while True:
            handle = self._handle
            if handle is not None:
                self.state.elapsed = handle.clock.elapsed()
                self.state.on_change()
            await trio.sleep(TICK)

    def _finished(self, submit: Submit, result: RunResult, log_dir: Path | None) -> None:
        state = self.state
        state.last_result = result
        state.usage = state.usage.add(result)
        if result.final_answer is not None:
            state.history.append(
                Turn(
                    task=submit.task,
                    final_answer=result.final_answer,
                    winner=result.winner,
                    run_id=log_dir.name if log_dir is not None else "",
                )
            )
        if self.sessions is not None:
            self.sessions.turn_ended(submit, result)
        keep_in_project(Path.cwd(), log_dir, result.workspace_path)
        plans = self.plans if submit.modes.plan_mode else None
        self._print(answer_block(result, shown=plans.shown(result) if plans else None))
        if result.termination is Termination.CANCELLED:
            state.tell("run cancelled; its partial result is shown above")
        if plans is not None:
            plans.turn_ended(submit, result, log_dir)

    def _new_log_dir(self) -> Path | None:
        if self._log_root is None:
            return None
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = self._log_root / f"{stamp}-{secrets.token_hex(3)}"
        try:
            path.mkdir(parents=True)
        except OSError as exc:
            self.state.tell(
                f"cannot create the run's log directory {display_path(path)} "
                f"({exc.strerror or exc}); this run keeps no log"
            )
            return None
        return path

    # -- the override window (called by the gate, in the run's actors' tasks) ---------------

    def _window_opened(self, request: OverrideRequest) -> None:
        view = self.state.view
        contents = {a.label: a.content for a in view.answers} if view is not None else {}
        order = [request.winner, *(a for a in request.answers if a != request.winner)]
        rows = tuple(
            OverrideRow(
                agent=agent,
                label=request.answers[agent],
                preview=" ".join(contents.get(request.answers[agent], "").split())[:200],
            )
            for agent in order
            if agent in request.answers
        )
        self.state.override = OverrideWindow(
            winner=request.winner, label=request.label, tally=dict(request.tally), rows=rows
        )
        self.state.on_change()

    def _window_closed(self) -> None:
        self.state.override = None
        self.state.on_change()


_STATUS = {
    CollaborationMode.DEFAULT: "Running",
    CollaborationMode.PLAN: "Planning",
    CollaborationMode.EXECUTE: "Executing",
}


@asynccontextmanager
async def open_repl_service(
    *,
    resolved: ResolvedConfig,
    state: ReplState,
    printer: Printer,
    log_root: Path | None,
    backend_factory: Callable[[AgentConfig], LLMBackend] | None = None,
) -> AsyncIterator[ReplService]:
    """The session's pool, MCP servers and hub, and a service using them; all close on
    leaving. The servers start in the background (the prompt does not wait for them) and are
    lent to each turn's run, so a turn does not pay their start-up again."""
    async with open_backends() as pool, open_session_servers(resolved.base) as mcp:
        with EventHub() as hub:
            yield ReplService(
                mcp=mcp,
                resolved=resolved,
                state=state,
                printer=printer,
                log_root=log_root,
                backends=pool,
                hub=hub,
                backend_factory=backend_factory,
            )
