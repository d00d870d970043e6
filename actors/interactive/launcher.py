"""``launch_run``: a run the interactive agent asks for, from request to outcome.

1. The arguments are read and the run's config resolved through the one resolver
   (:mod:`config.launch`); anything wrong raises :class:`~config.launch.LaunchError`, which the
   tool hands back to the agent as its error.
2. With approval required, the person decides (:mod:`actors.human.run_approval`): Approve,
   Approve after editing the task or context, or Cancel (a ``not_approved`` outcome).
3. The task, with the context under it, is the run's first user message, and the run goes
   through the normal driver (its own log directory and event log) via a :class:`RunDriver`:
   the REPL's shows it on screen, the headless one only runs it.
4. ``planning_mode``: the run plans (collaboration mode ``plan``) and its plan is saved under
   its log directory (``plans/plan-v1.json``); with ``execute_after_planning`` a second run
   executes the winning plan (:func:`actors.planning.flow.execution_task`, mode ``execute``).
   A planning answer that is not a plan is not executed: the outcome says so.
5. In a project (:mod:`actors.interactive.project`), each run is linked under ``runs/`` and
   the last run's deliverable is copied to ``deliverables/``.

Cancellation (the session ends, Ctrl+C while the person decides) abandons the launch; a run
already started ends ``cancelled`` through its driver, as any run does.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import attrs

from conclave.actors.events.hub import EventHub
from conclave.actors.human.run_approval import (
    ApproveAll,
    RunApprovalRequest,
    RunApprover,
    RunRefused,
)
from conclave.actors.interactive.outcome import CoordinationSummary, LaunchOutcome, RunRecord
from conclave.actors.interactive.project import Project
from conclave.actors.llm.pool import BackendPool
from conclave.actors.llm.protocol import LLMBackend
from conclave.actors.mcp.session import McpSession
from conclave.actors.planning.flow import PlanStore, execution_task
from conclave.actors.planning.plan import parse_plan
from conclave.actors.run.driver import RunSpec, drive
from conclave.actors.run.result import RunResult, Termination
from conclave.config.launch import LaunchRequest, launch_config
from conclave.config.modes import CollaborationMode
from conclave.config.resolver import ResolvedConfig
from conclave.config.schema import AgentConfig, ConclaveConfig

__all__ = ["HubDriver", "RunDriver", "RunLauncher"]


class RunDriver(Protocol):
    async def __call__(self, spec: RunSpec, *, status: str) -> RunResult:
        """Run ``spec`` to its end (``status`` says what it is: Running, Planning, Executing
        plan); cancelling the caller ends it ``cancelled``."""
        ...


@attrs.frozen
class HubDriver:
    """Runs each spec with :func:`actors.run.driver.drive`, its events into ``hub``."""

    hub: EventHub | None = None

    async def __call__(self, spec: RunSpec, *, status: str) -> RunResult:
        return await drive(spec, self.hub)


class RunLauncher:
    """See the module docstring; one per interactive session."""

    def __init__(
        self,
        *,
        resolved: ResolvedConfig,
        driver: RunDriver,
        approver: RunApprover | None = None,
        log_root: Path | None = None,
        project: Project | None = None,
        backends: BackendPool | None = None,
        mcp: McpSession | None = None,
        backend_factory: Callable[[AgentConfig], LLMBackend] | None = None,
        on_run: Callable[[RunRecord], None] = lambda record: None,
    ) -> None:
        self.resolved = resolved
        self.driver = driver
        self.approver: RunApprover = approver or ApproveAll()
        """Who approves each run; :class:`ApproveAll` when approval is not required."""
        self.log_root = log_root
        self.project = project
        self.backends = backends
        self.mcp = mcp
        self.backend_factory = backend_factory
        self.on_run = on_run
        """Told of every run as it ends (the session links it)."""

    async def launch(self, request: LaunchRequest) -> LaunchOutcome:
        """Resolve, ask, run (see the module docstring). Raises
        :class:`~config.launch.LaunchError` for a request that cannot run."""
        config = launch_config(self.resolved, request)
        decision = await self.approver.approve_run(
            RunApprovalRequest(
                task=request.task,
                context=request.context,
                agents=tuple(a.id for a in config.agents),
                agent_mode=request.agent_mode,
                refinement=request.refinement,
                planning_mode=request.planning_mode,
                execute_after_planning=request.execute_after_planning,
            )
        )
        if isinstance(decision, RunRefused):
            return LaunchOutcome.refused(decision.reason)
        request = attrs.evolve(request, task=decision.task, context=decision.context)
        if not request.planning_mode:
            result, run_id = await self._run(
                config, request.first_message, CollaborationMode.DEFAULT, "Running"
            )
            return self._delivered(LaunchOutcome.of(result, run_id), result, run_id)
        planned, plan_id = await self._run(
            config, request.first_message, CollaborationMode.PLAN, "Planning"
        )
        plan = parse_plan(planned.final_answer) if planned.final_answer is not None else None
        if plan is not None and planned.log_dir is not None:
            # A plan that cannot be saved is still in the outcome and in the run's log.
            with contextlib.suppress(OSError):
                PlanStore(Path(planned.log_dir)).save(plan)
        outcome = attrs.evolve(LaunchOutcome.of(planned, plan_id), plan=plan)
        if not request.execute_after_planning or planned.termination is not Termination.COMPLETED:
            return outcome
        if plan is None:
            return attrs.evolve(
                outcome,
                reason="the planning run's answer is not a plan, so nothing was executed",
            )
        executed, run_id = await self._run(
            config, execution_task(plan, ""), CollaborationMode.EXECUTE, "Executing plan"
        )
        both = attrs.evolve(
            LaunchOutcome.of(executed, run_id),
            plan=plan,
            planning=CoordinationSummary.of(planned),
            runs=(*outcome.runs, RunRecord.of(executed, run_id)),
        )
        return self._delivered(both, executed, run_id)

    async def _run(
        self, config: ConclaveConfig, task: str, mode: CollaborationMode, status: str
    ) -> tuple[RunResult, str]:
        log_dir = self._new_log_dir()
        run_id = log_dir.name if log_dir is not None else _run_id()
        spec = RunSpec(
            task=task,
            config=config,
            mode=mode,
            log_dir=log_dir,
            backends=self.backends,
            mcp=self.mcp,
            backend_factory=self.backend_factory,
        )
        result = await self.driver(spec, status=status)
        if self.project is not None and log_dir is not None:
            self.project.link_run(log_dir)  # the deliverable: the launch's last run's, below
        self.on_run(RunRecord.of(result, run_id))
        return result, run_id

    def _delivered(self, outcome: LaunchOutcome, result: RunResult, run_id: str) -> LaunchOutcome:
        """In a project, the deliverable of the run that presented the final answer."""
        if self.project is None or result.workspace_path is None:
            return outcome
        saved = self.project.save_deliverables(run_id, Path(result.workspace_path))
        return attrs.evolve(outcome, deliverables=str(saved) if saved is not None else None)

    def _new_log_dir(self) -> Path | None:
        if self.log_root is None:
            return None
        path = self.log_root / _run_id()
        try:
            path.mkdir(parents=True)
        except OSError:
            return None
        return path


def _run_id() -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
