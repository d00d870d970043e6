"""The REPL's trio side: one service for the whole session.

It owns what outlives a turn — the backend pool (connections stay warm), the event hub, the
current run and the conversation's history — and takes commands from the UI through a
memory channel that the UI feeds with ``trio_token.run_sync_soon(send.send_nowait, ...)``.
It runs on the runtime's own thread and never waits for the UI: what the screen shows
(:class:`~ui.repl.state.ReplState`) is changed only by functions it hands to the UI's
thread (:data:`Post`). A run's events are folded where they are recorded
(:class:`~ui.repl.live.LiveRun`) and reach the screen as a snapshot at most every
:data:`PUBLISH_INTERVAL`, however many agents there are; tool calls are printed as they
start and end.

One run at a time. A turn submitted while a run executes is queued and sent when it ends;
a line typed while a run with PAOR agents works is a correction for them instead, until
their answer rounds are over (at the vote prompt, during the presentation): then no PAOR
round is left to take it, and the line, said so at once, is queued as the next turn.
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
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Protocol

import attrs
import trio
from prompt_toolkit.formatted_text import StyleAndTextTuples

from conclave.actors.events import DomainEvent, EventHub
from conclave.actors.events.loop import ToolCallFinished, ToolCallStarted
from conclave.actors.human.gate import OverrideChoice, OverrideRequest
from conclave.actors.human.questions import QuestionGate
from conclave.actors.human.tool_approval import ToolApprover
from conclave.actors.interactive.project import keep_in_project
from conclave.actors.llm.pool import BackendPool, open_backends
from conclave.actors.llm.protocol import LLMBackend
from conclave.actors.mcp.session import McpSession, open_session_servers
from conclave.actors.paor.corrections import NoRoundLeft
from conclave.actors.paor.events import CorrectionUnused
from conclave.actors.run.driver import RunHandle, RunSpec, drive
from conclave.actors.run.events import SandboxOpened
from conclave.actors.run.result import RunResult, Termination
from conclave.actors.run.turn import Turn
from conclave.actors.tools.permissions import SessionAllowances
from conclave.config.modes import CollaborationMode, UnknownAgent
from conclave.config.problems import ConfigError
from conclave.config.resolver import ResolvedConfig
from conclave.config.schema import AgentConfig
from conclave.runtime import ConclaveRuntimeError
from conclave.ui.repl.live import LiveRun
from conclave.ui.repl.plan_dialog import PlanDecision
from conclave.ui.repl.protocol import (
    Cancel,
    ClearHistory,
    Command,
    Compact,
    Continue,
    Correct,
    Override,
    Quit,
    Resume,
    SetPermissionMode,
    Submit,
)
from conclave.ui.repl.render import answer_block, tool_finished_line, tool_started_line
from conclave.ui.repl.state import OverrideRow, OverrideWindow, ReplState, UsageTotals
from conclave.ui.text import display_path
from conclave.ui.timeline import describe

__all__ = [
    "PUBLISH_INTERVAL",
    "PUBLISH_SHARE",
    "InteractiveHook",
    "PlanHook",
    "Post",
    "Printer",
    "ReplService",
    "SessionHook",
    "open_repl_service",
]

PUBLISH_INTERVAL = 0.05
"""How often, at most, a running turn's snapshot and elapsed time go to the screen: the UI
draws at most this often anyway (``app.REDRAW_INTERVAL``)."""
PUBLISH_SHARE = 0.1
"""The most of the runtime's thread that snapshots for the screen may take."""

Post = Callable[[Callable[[], None]], None]
"""Runs a function on the UI's thread, soon and in order (the UI loop's
``call_soon_threadsafe``). Every change to the screen's state goes through it."""


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
        post: Post,
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
        """Written only through :attr:`_post`, on the UI's thread."""
        self.plans: PlanHook | None = None
        self.questions: QuestionGate | None = None
        """Who answers the agents' questions (the question card); ``None``: runs take none."""
        self.interactive: InteractiveHook | None = None
        """With ``orchestrator.interactive_mode`` on, each turn goes to the agent."""
        self.sessions: SessionHook | None = None
        self.tool_approver: ToolApprover | None = None
        """Who approves tool calls that ask (:mod:`ui.repl.tool_approvals`); ``None``:
        nobody, and such calls are refused."""
        self.tool_allowances: SessionAllowances | None = None
        """What the person allowed for the session, shared by every run."""
        self._post = post
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
        self._running = False
        self._history: list[Turn] = []
        self._usage = UsageTotals()
        self._live: LiveRun | None = None
        self._window: OverrideWindow | None = None
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

    @property
    def history(self) -> list[Turn]:
        """The conversation, the service's own (the screen shows a copy). Change it only with
        :meth:`set_history` and :meth:`add_turn`, which keep the copy in step."""
        return self._history

    def set_history(self, turns: Iterable[Turn]) -> None:
        """The conversation is now ``turns`` (a resume, a compaction): a new list, so whoever
        kept the old one sees that it was replaced."""
        self._history = list(turns)
        self.show(history=list(self._history))

    def add_turn(self, turn: Turn) -> None:
        self._history.append(turn)
        self.show(history=list(self._history))

    def count_run(self, result: RunResult) -> None:
        """A run outside a typed turn (the interactive agent's) counts in the usage too."""
        self._usage = self._usage.add(result)
        self.show(last_result=result, usage=self._usage)

    # -- the screen (every change goes to the UI's thread) ----------------------------------

    def post(self, change: Callable[[], None]) -> None:
        """Run ``change`` on the UI's thread, soon and after what was posted before: the only
        way code on the runtime's thread touches the screen's state or the application."""
        self._post(change)

    def show(self, **changes: object) -> None:
        """Set these attributes of the screen's state, on the UI's thread, and redraw."""
        state = self.state

        def apply() -> None:
            for name, value in changes.items():
                setattr(state, name, value)
            state.on_change()

        self._post(apply)

    def _correct(self, command: Correct) -> None:
        """Pass a correction to the running run's PAOR agents, or say why not."""
        handle = self._handle
        if handle is None:
            self.tell("no run is going: /correct corrects the PAOR agents of a running run")
            return
        try:
            handle.correct(command.text, command.agent)
        except ValueError as exc:
            self.tell(str(exc))
            return
        who = command.agent or ", ".join(handle.corrections.paor)
        self.tell(f"correction sent to {who}; PAOR agents take it at their next step")

    def _corrected(self, submit: Submit) -> bool:
        """A line typed while a run works goes to its PAOR agents as a correction, and the
        screen says so; ``False`` when the run has none (or has ended), or none of its PAOR
        rounds is left (the vote prompt, the presentation: the screen says so at once): then
        it is the next turn, queued, as in any run."""
        handle = self._handle
        if handle is None:
            return False
        try:
            handle.correct(submit.task)
        except NoRoundLeft:
            self.tell(_NO_ROUND_LEFT)
            return False
        except ValueError:
            return False
        shown = submit.shown_task or submit.task
        agents = ", ".join(handle.corrections.paor)
        self._print([("class:prompt", "> "), ("class:user", shown + "\n")])
        self.tell(
            f"correction sent to {agents} (PAOR): taken at the next step, not queued as a turn"
        )
        return True

    def tell(self, notice: str) -> None:
        state = self.state
        self._post(lambda: state.tell(notice))

    def _switch_after_run(self) -> None:
        """On the UI's thread, once the run has stopped (posted after ``running=False``): the
        collaboration mode confirmed while it worked (:mod:`ui.repl.mode_switch`)."""
        state = self.state
        switch, state.after_run = state.after_run, None
        if switch is not None:
            state.tell(state.set_collaboration(switch) or f"collaboration mode: {switch.value}")

    def _publish(self, live: LiveRun) -> None:
        """The run's snapshot, and its elapsed time, to the screen."""
        handle = self._handle
        elapsed = handle.clock.elapsed() if handle is not None else None
        snapshot = live.snapshot()
        if elapsed is None:
            self.show(live=snapshot)
        else:
            self.show(live=snapshot, elapsed=elapsed)

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
            if handle is None or self._window is None:
                self.tell("no vote is waiting for a decision")
                return
            assert self._nursery is not None
            self._nursery.start_soon(self._decide, handle, command)
        elif isinstance(command, Correct):
            self._correct(command)
        elif isinstance(command, ClearHistory):
            self._history = []
            self.show(history=[])
            if self.sessions is not None:
                self.sessions.cleared()
        elif isinstance(command, Compact | Resume):
            self._session_command(command)
        elif isinstance(command, SetPermissionMode):
            # The runs started from now on: a run's config is fixed when it starts.
            base = self.resolved.base
            permissions = attrs.evolve(base.permissions, mode=command.mode)
            self.resolved = attrs.evolve(
                self.resolved, base=attrs.evolve(base, permissions=permissions)
            )

    def _session_command(self, command: Compact | Resume) -> None:
        """``/compact`` and ``/resume`` wait for no run: they change the history a run uses."""
        sessions = self.sessions
        if sessions is None:
            self.tell("this REPL keeps no session")
            return
        if self._running:
            what = "/compact" if isinstance(command, Compact) else "/resume"
            self.tell(f"{what} works between runs; wait for this one to end")
            return
        if isinstance(command, Resume):
            sessions.resume(command.session_id)
            return
        assert self._nursery is not None
        self._idle = trio.Event()
        self._running = True
        self.show(running=True, status="Compacting")
        self._nursery.start_soon(self._compact, sessions, command.instructions)

    async def _compact(self, sessions: SessionHook, instructions: str) -> None:
        try:
            await sessions.compact(instructions)
        finally:
            self._running = False
            self.show(running=False, status="")
            self._post(self.state.run_stopped)
            self._post(self._switch_after_run)
            self._idle.set()

    def _submit(self, submit: Submit) -> None:
        if self._running and submit.typed and self._corrected(submit):
            return
        if self._running:
            self._queue.append(submit)
            self.show(queued=self._queue_shown())
            return
        assert self._nursery is not None
        self._idle = trio.Event()
        self._started(submit)
        self._nursery.start_soon(self._turns, submit)

    def _started(self, submit: Submit) -> None:
        """The screen shows ``submit`` as running from the moment it is taken (and a cancel
        from then on is for it)."""
        self._cancel_asked = False
        self._running = True
        self.show(running=True, status=submit.status or _STATUS[submit.modes.collaboration])

    def _cancel(self) -> None:
        dropped = len(self._queue)
        self._queue.clear()
        self.show(queued=[])
        if dropped:
            self._print([("class:notice", f"{dropped} queued turn(s) dropped\n")])
        if not self._running:
            return
        self.tell("cancelling the run")
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
            self.tell("the run ended before the decision reached it")
            return
        if not verdict.accepted:
            self.tell(f"the decision was not taken: {verdict.error or 'the vote is over'}")

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
                    self.show(queued=self._queue_shown())
                    self._started(submit)
        finally:
            self._running = False
            self.show(running=False, status="")
            self._post(self.state.run_stopped)
            self._post(self._switch_after_run)
            self._idle.set()

    def _queue_shown(self) -> list[str]:
        return [submit.shown_task or submit.task for submit in self._queue]

    async def _turn(self, submit: Submit) -> None:
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
            history=tuple(self._history),
            log_dir=log_dir,
            backends=self._backends,
            mcp=self._mcp,
            backend_factory=self._backend_factory,
        )
        result = await self.drive_run(spec)
        if result is not None:
            self._finished(submit, result, log_dir)

    async def drive_run(self, spec: RunSpec) -> RunResult | None:
        """Run ``spec`` on screen (its snapshots, its elapsed time, its tool calls, Ctrl+C and
        the override window for it) and return its result; ``None`` when it could not start
        (said on screen)."""
        sessions = self.sessions
        if spec.human is None:
            spec = attrs.evolve(spec, human=_WindowGate(self))
        if spec.tool_approver is None:
            spec = attrs.evolve(
                spec, tool_approver=self.tool_approver, tool_allowances=self.tool_allowances
            )
        if spec.questions is None and self.questions is not None:
            spec = attrs.evolve(spec, questions=self.questions)
        live = self._live = LiveRun(spec.config)
        self.show(live=live.snapshot(), elapsed=0.0, last_log_dir=spec.log_dir)

        def seen(event: DomainEvent) -> None:
            live.apply(event)
            if sessions is not None:
                sessions.saw(event)
            if isinstance(event, ToolCallStarted):
                self._print(tool_started_line(event))
            elif isinstance(event, ToolCallFinished):
                self._print(tool_finished_line(event))
            elif isinstance(event, SandboxOpened) and event.warning is not None:
                self._print([("class:error", f"{describe(event)}\n")])  # unconfined, say so
            elif isinstance(event, CorrectionUnused):
                self._print([("class:notice", f"{describe(event)}\n")])  # came too late

        try:
            with self._hub.subscribe_sync(seen, name="repl"):
                async with trio.open_nursery() as ticking:
                    ticking.start_soon(self._tick, live)
                    try:
                        result = await drive(spec, self._hub, on_open=self._opened)
                    finally:
                        ticking.cancel_scope.cancel()
        except Exception as exc:  # the log could not be created: nothing ran
            self._print([("class:error", f"the run could not start: {exc}\n")])
            return None
        finally:
            self._handle = None
            self._window = None
            self.show(override=None)
        self._publish(live)
        return result

    def _opened(self, handle: RunHandle) -> None:
        self._handle = handle
        if self._cancel_asked:
            handle.cancel()

    async def _tick(self, live: LiveRun) -> None:
        """Publish the run's snapshot while it runs: every :data:`PUBLISH_INTERVAL` at most,
        and less often when a snapshot is dear (many agents), so that snapshots take at most
        :data:`PUBLISH_SHARE` of the runtime's thread. With no new event only the elapsed
        time goes (it moves anyway)."""
        while True:
            started = time.perf_counter()
            handle = self._handle
            if live.changed:
                self._publish(live)
            elif handle is not None:
                self.show(elapsed=handle.clock.elapsed())
            cost = time.perf_counter() - started
            await trio.sleep(max(PUBLISH_INTERVAL, cost / PUBLISH_SHARE))

    def _finished(self, submit: Submit, result: RunResult, log_dir: Path | None) -> None:
        self._usage = self._usage.add(result)
        if result.final_answer is not None:
            self._history.append(
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
        # One change for the screen: it never shows the turn's result with the run still
        # going (a key in between would find the toggles refused).
        idle = {} if self._queue else {"running": False, "status": ""}
        self.show(last_result=result, usage=self._usage, history=list(self._history), **idle)
        plans = self.plans if submit.modes.plan_mode else None
        self._print(answer_block(result, shown=plans.shown(result) if plans else None))
        if result.termination is Termination.CANCELLED:
            self.tell("run cancelled; its partial result is shown above")
        if plans is not None:
            self._post(lambda: plans.turn_ended(submit, result, log_dir))

    def _new_log_dir(self) -> Path | None:
        if self._log_root is None:
            return None
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = self._log_root / f"{stamp}-{secrets.token_hex(3)}"
        try:
            path.mkdir(parents=True)
        except OSError as exc:
            self.tell(
                f"cannot create the run's log directory {display_path(path)} "
                f"({exc.strerror or exc}); this run keeps no log"
            )
            return None
        return path

    # -- the override window (called by the gate, in the run's actors' tasks) ---------------

    def _window_opened(self, request: OverrideRequest) -> None:
        live = self._live
        answers = live.view.answers if live is not None else []
        contents = {a.label: a.content for a in answers}
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
        window = OverrideWindow(
            winner=request.winner, label=request.label, tally=dict(request.tally), rows=rows
        )
        self._window = window
        if live is not None:
            self._publish(live)  # the votes as they stand, with the prompt
        self.show(override=window)

    def _window_closed(self) -> None:
        self._window = None
        self.show(override=None)


_NO_ROUND_LEFT = (
    "no PAOR round is left in this run (voting is over): the line is queued as the next "
    "turn, not sent as a correction"
)

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
    post: Post,
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
                post=post,
                printer=printer,
                log_root=log_root,
                backends=pool,
                hub=hub,
                backend_factory=backend_factory,
            )
