"""The interactive agent in the REPL: each turn goes to it, and the runs it launches show on
screen as any run does.

With ``orchestrator.interactive_mode`` on, :func:`attach_interactive` makes an
:class:`~actors.interactive.session.InteractiveSession` the service's entry point
(:class:`~ui.repl.service.InteractiveHook`). A turn prints the agent's reply (or why there is
none). A run it launches goes through the service's :meth:`~ui.repl.service.ReplService.drive_run`:
the progress lines, the elapsed time, Ctrl+C (which ends the run; the agent is told it was
cancelled) work as for a typed turn, but the vote stands (no override window: the agent
reads the result); its answer is not printed (the agent tells it), only a line saying how it
ended and where its log is.

The agent's own calls go through the session's permission rules and the tool approval card
(:mod:`actors.interactive.approval`), as its runs' calls do.

Run approval (``require_approval``, the default): the approver opens the approval dialog
(:mod:`ui.repl.approval_dialog`) in the input's place and waits for the person's decision;
the state holds the pending request. Ctrl+C or Esc in the dialog is its Cancel. Ctrl+C while
the agent thinks ends its turn.

Threads: the flow's turns, runs and approver run on the runtime's thread; the screen's state,
the dialog and the application belong to the UI's thread. So every change of the screen goes
through the service (:meth:`~ui.repl.service.ReplService.show`,
:meth:`~ui.repl.service.ReplService.post`), the conversation is the service's
(:attr:`~ui.repl.service.ReplService.history`), and the person's decision comes back through
the trio token.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import trio

from conclave.actors.human.gate import AcceptWinner
from conclave.actors.human.run_approval import (
    ApproveAll,
    RunApprovalRequest,
    RunDecision,
    RunRefused,
)
from conclave.actors.interactive.approval import interactive_gate
from conclave.actors.interactive.launcher import RunLauncher
from conclave.actors.interactive.outcome import RunRecord
from conclave.actors.interactive.project import find_project
from conclave.actors.interactive.session import (
    InteractiveSession,
    interactive_agent,
    workspace_note,
)
from conclave.actors.planning.plan import parse_plan, plan_json
from conclave.actors.run.driver import RunSpec
from conclave.actors.run.result import RunResult
from conclave.actors.run.turn import Turn
from conclave.actors.session.compaction import CompactionPolicy
from conclave.actors.tools.permissions import SessionAllowances
from conclave.config.modes import CollaborationMode
from conclave.config.schema import ConclaveConfig
from conclave.config.schema.interactive import InteractiveModeConfig
from conclave.ui.repl.approval_dialog import ApprovalChoice, ApprovalDialog
from conclave.ui.repl.protocol import Submit
from conclave.ui.repl.service import ReplService
from conclave.ui.repl.state import Dialog
from conclave.ui.text import display_path

if TYPE_CHECKING:
    from conclave.ui.repl.app import Repl

__all__ = ["THINKING", "InteractiveFlow", "attach_interactive", "compaction_policy"]

THINKING = "Thinking"
"""The status line while the agent works on a turn and no run executes."""


async def attach_interactive(repl: Repl, service: ReplService) -> InteractiveFlow | None:
    """Make the interactive agent the service's entry point when the config turns it on."""
    settings = service.resolved.base.orchestrator.interactive
    if settings is None:
        return None
    flow = InteractiveFlow(repl, service, settings)
    await flow.open()
    service.interactive = flow

    def shown() -> None:
        repl.approvals = flow

    service.post(shown)
    service.show(interactive=True)
    return flow


def compaction_policy(config: ConclaveConfig) -> CompactionPolicy:
    """The session's compaction policy: ``interactive_mode.context_compaction`` when the
    section is there, the defaults otherwise."""
    mode = config.orchestrator.interactive_mode
    if mode is None:
        return CompactionPolicy()
    settings = mode.context_compaction
    return CompactionPolicy(
        enabled=settings.enabled,
        threshold_tokens=settings.threshold_tokens,
        preserve_recent=settings.preserve_recent,
    )


class InteractiveFlow:
    """See the module docstring; one per REPL session."""

    def __init__(self, repl: Repl, service: ReplService, settings: InteractiveModeConfig) -> None:
        self.repl = repl
        self.service = service
        self.settings = settings
        self.dialog: ApprovalDialog | None = None
        self.session: InteractiveSession | None = None
        self._turn_scope: trio.CancelScope | None = None
        self._decided: trio.MemorySendChannel[RunDecision] | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._history = service.history
        """The conversation the agent's transcript was built from (a resume, a compaction or
        ``/clear`` replaces the service's list: the next turn starts from the new one)."""
        self._known = len(self._history)
        """Its length as the agent's turns left it."""
        project = find_project(Path.cwd())
        self.launcher = RunLauncher(
            resolved=service.resolved,
            driver=self._drive,
            approver=self if settings.require_approval else ApproveAll(),
            log_root=service.log_root,
            project=project,
            backends=service.backends,
            mcp=service.mcp,
            backend_factory=service.backend_factory,
            on_run=self._ran,
        )

    async def open(self) -> None:
        """The agent's backend, from the session's pool (or the tests' factory)."""
        self._token = trio.lowlevel.current_trio_token()
        config = self.service.resolved.base
        agent = interactive_agent(config, self.settings)
        factory = self.service.backend_factory
        backend = (
            factory(agent) if factory is not None else await self.service.backends.backend(agent)
        )
        self._history = self.service.history
        self._known = len(self._history)
        project = self.launcher.project
        root = project.root if project else Path.cwd()
        self.session = InteractiveSession(
            config=config,
            settings=self.settings,
            backend=backend,
            launcher=self.launcher,
            workspace=workspace_note(config, root),
            history=self._history,
            before_call=interactive_gate(
                config.permissions,
                self.service.tool_approver,
                session=self.service.tool_allowances or SessionAllowances(),
                workspace=root,
                run_approval=self.settings.require_approval,
            ),
        )
        if project is not None:
            self.service.print(
                [("", f"project {display_path(project.root)}: its CONTEXT.md is read\n")]
            )

    # -- turns (the trio side) ------------------------------------------------------------------

    async def turn(self, submit: Submit) -> None:
        service = self.service
        session, sessions, history = self.session, service.sessions, service.history
        assert session is not None
        if history is not self._history or len(history) != self._known:
            # Resumed, compacted or cleared since the last turn: the agent goes on from that.
            session.restart(history)
            self._history = history
        service.show(status=THINKING)
        if sessions is not None:
            sessions.turn_started(submit)
        with trio.CancelScope() as scope:
            self._turn_scope = scope
            try:
                reply = await session.turn(submit.task)
            finally:
                self._turn_scope = None
        if scope.cancelled_caught:
            self.service.print([("class:notice", "the agent's turn was cancelled\n")])
            return
        if reply.text is None:
            self.service.print([("class:error", f"the agent could not answer: {reply.error}\n")])
            return
        service.add_turn(Turn(task=submit.task, final_answer=reply.text))
        self._known = len(service.history)
        if sessions is not None:
            sessions.replied(reply.text, input_tokens=reply.input_tokens)
        self.service.print([("class:answer", reply.text.rstrip("\n") + "\n")])

    def cancel(self) -> None:
        if self._turn_scope is not None:
            self._turn_scope.cancel()

    async def _drive(self, spec: RunSpec, *, status: str) -> RunResult:
        """A launched run, on screen as a typed turn's run is."""
        service = self.service
        run_id = spec.log_dir.name if spec.log_dir is not None else None
        service.show(run_id=run_id, status=status)
        try:
            # The vote stands: the agent reads the result and the person talks with it, so
            # a launched run does not stop for the override window.
            result = await service.drive_run(attrs.evolve(spec, human=AcceptWinner()))
        finally:
            service.show(run_id=None, status=THINKING)
        if result is None:
            raise RuntimeError("the run could not start (said above)")
        service.count_run(result)
        sessions = service.sessions
        if sessions is not None:
            sessions.run_launched(result)
            plan = (
                parse_plan(result.final_answer or "")
                if spec.mode is CollaborationMode.PLAN
                else None
            )
            if plan is not None and run_id is not None:
                sessions.plan_proposed(plan_json(plan), run_id=run_id)
        return result

    def _ran(self, record: RunRecord) -> None:
        where = f"; log {display_path(record.log_dir)}" if record.log_dir is not None else ""
        winner = f", winner {record.winner}" if record.winner else ""
        self.service.print(
            [("class:notice", f"run {record.run_id} ended {record.termination}{winner}{where}\n")]
        )

    # -- approval ---------------------------------------------------------------------------------

    async def approve_run(self, request: RunApprovalRequest) -> RunDecision:
        """Open the dialog and wait for the person (the run's clocks have not started)."""
        send, receive = trio.open_memory_channel[RunDecision](1)
        self._decided = send
        self.service.post(lambda: self._open(request))
        try:
            return await receive.receive()
        finally:
            self._decided = None
            self.service.post(self._close)

    def _open(self, request: RunApprovalRequest) -> None:
        """On the UI's thread: the dialog in the input's place."""
        repl, state = self.repl, self.repl.state
        dialog = ApprovalDialog(request)
        dialog.on_decided.append(lambda decision: self._chosen(request, decision))
        self.dialog = dialog
        state.pending_approval = request
        repl.plan_container = dialog.container
        state.dialog = Dialog.RUN_APPROVAL
        # As the plan dialog does: learn the parents now, so the first key finds the dialog's.
        repl.app.layout.update_parents_relations()
        repl.app.layout.focus(dialog.focus)
        state.on_change()

    def _chosen(self, request: RunApprovalRequest, decision: RunDecision) -> None:
        """The dialog decided (on the UI's side): hand it to the waiting approver."""
        send, token = self._decided, self._token
        if send is not None and token is not None:
            token.run_sync_soon(_deliver, send, decision)
        if isinstance(decision, RunRefused):
            self.repl.say("run cancelled; the agent is told")
        elif decision.task != request.task:
            self.repl.say(f"run approved with the edited task: {decision.task}")

    def _close(self) -> None:
        """On the UI's thread: the input back in the dialog's place."""
        repl, state = self.repl, self.repl.state
        self.dialog = None
        state.pending_approval = None
        if state.dialog is Dialog.RUN_APPROVAL:
            repl.plan_container = None
            state.dialog = Dialog.NONE
            repl.app.layout.focus(repl.buffer)
        state.on_change()

    def cancel_dialog(self) -> None:
        """Ctrl+C or Esc in the dialog: as its Cancel."""
        if self.dialog is not None:
            self.dialog.choose(ApprovalChoice.CANCEL)


def _deliver(send: trio.MemorySendChannel[RunDecision], decision: RunDecision) -> None:
    try:
        send.send_nowait(decision)
    except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
        return  # decided already, or nobody waits any more
