"""What a run opens for its agents' tools: workspaces, sandboxes and tool executors.

Agents have tools when the config asks for them (``orchestrator.tools: true``) or gives
context paths (``orchestrator.context_paths``, ``--context``): a run that only talks (every
scripted load benchmark) opens nothing here and its requests carry no tool schemas.

With tools, the run's working directory (:mod:`actors.workspace.layout`) is
``RunSpec.workdir``, or by default the run's log directory (so a headless run keeps
everything in ``.conclave/runs/<id>/``), or, for a run without either, a new temporary
directory that is kept (``final/`` is the deliverable). :meth:`RunServices.start` makes it
(and connects to the docker engine) as the run starts, so a failure there fails the run
with its reason. Each agent then gets, from :meth:`RunServices.agent_tools`, its
:class:`~actors.workspace.grants.AgentWorkspace`, a sandbox (``orchestrator.sandbox``) that
mounts the context paths read-only (writable ones rw only when the modes table puts the
writing in coordination) and the answer snapshots read-only, hides the run's own
directories (the log, the live workspaces), and an executor whose path policy asks the
workspace's grants.

MCP servers (``mcp_servers``, top level and per agent: :mod:`actors.mcp`) are actors under
the run's root supervisor, spawned by :meth:`RunServices.start` before the agents and so
stopped after them; their tools are added to each agent's executor.

Everything opened is closed when :func:`open_services` exits, after the run's actors have
stopped: every docker container is removed, however the run ended.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from secrets import token_hex
from typing import TYPE_CHECKING

import attrs
import trio

from conclave.actors.coordination.events import AnswerAdded
from conclave.actors.human.tool_approval import RefuseTools, ToolApprovalGate
from conclave.actors.llm.redaction import NO_REDACTION, Redactor
from conclave.actors.planning.flow import read_execution_task
from conclave.actors.planning.plan import Plan, parse_plan
from conclave.actors.run.clock import RunClock
from conclave.actors.run.events import SandboxOpened
from conclave.actors.run.redaction import redacting_tools
from conclave.actors.run.spec import RunSpec
from conclave.actors.tools.paths import PathPolicy
from conclave.actors.tools.permissions import Permissions, SessionAllowances
from conclave.actors.tools.protocol import NO_TOOLS, ToolExecutor
from conclave.actors.workspace.baseline_file import kept_baseline
from conclave.actors.workspace.grants import AgentWorkspace, context_mounts
from conclave.actors.workspace.layout import RunLayout
from conclave.actors.workspace.tracker import TrackerState
from conclave.actors.workspace.workspaces import RunWorkspaces
from conclave.config.modes import CollaborationMode
from conclave.config.run_secrets import NO_SECRETS, RunSecrets
from conclave.config.schema.context import ContextPath, ContextWritePhase
from conclave.config.schema.permissions import PermissionMode
from conclave.config.schema.sandbox import SandboxKind

if TYPE_CHECKING:
    from conclave.actors.mcp.confine import ServerGrants
    from conclave.actors.mcp.server import McpServers
    from conclave.actors.planning.progress import PlanProgress
    from conclave.actors.sandbox.open import DockerEngine
    from conclave.runtime import ActorSystem, Event

__all__ = [
    "AgentTooling",
    "RunServices",
    "declared_files",
    "executed_plan",
    "open_services",
    "workdir_of",
]


@attrs.frozen(kw_only=True)
class AgentTooling:
    """What one agent works with; ``workspace`` is ``None`` when it has no tools."""

    tools: ToolExecutor = NO_TOOLS
    workspace: AgentWorkspace | None = None


_NO_TOOLING = AgentTooling()


class RunServices:
    """The run's workspaces, write tracking and sandboxes; see the module docstring."""

    def __init__(
        self,
        *,
        spec: RunSpec,
        run_id: str,
        secrets: RunSecrets = NO_SECRETS,
        redactor: Redactor = NO_REDACTION,
        workspaces: RunWorkspaces | None = None,
        tracker: TrackerState | None = None,
        stack: contextlib.AsyncExitStack | None = None,
    ) -> None:
        self.spec = spec
        self.run_id = run_id
        self.secrets = secrets
        """Kept out of every sandbox's environment."""
        self.redactor = redactor
        """Every agent's tool results pass it (actors/run/redaction.py)."""
        self.workspaces = workspaces
        """``None`` when agents have no tools."""
        self.tracker = tracker
        """The WriteTracker's state; ``None`` when no context path is writable."""
        self._stack = stack
        self._engine: DockerEngine | None = None
        self._deadline: float | None = None
        """When the run's ``run_timeout`` passes (wall clock): docker containers end by
        themselves some time after it, should the run be gone without removing them."""
        self.mcp: McpServers | None = None
        """The run's MCP servers, once :meth:`start` has spawned them."""
        self.clock: RunClock | None = None
        """The run's timer (set by the driver): paused while a person approves a call."""
        self.allowances = spec.tool_allowances or SessionAllowances()
        self._record: Callable[[Event], None] | None = None
        """The run's event recorder, once :meth:`start` has it."""
        self.plan_progress: PlanProgress | None = None
        """The executing plan's step statuses (``update_plan``), once :meth:`start` has
        run, when the run executes an approved plan."""

    async def start(self, system: ActorSystem | None = None) -> None:
        """Make the working directory and, for docker sandboxes, connect to the engine (its
        image checked, orphans of dead runs removed), then record :class:`SandboxOpened`
        (unconfined commands and removed orphans said at start). Called as the run starts,
        so that what goes wrong here (an unwritable workdir, no engine) fails the run and
        says why. With ``system``, the configured MCP servers are then spawned under its
        root, confined to the context paths (:meth:`server_grants`; after the working
        directory is made, so the run's own directories in a context path are covered),
        and their first starts awaited (a server that cannot start is reported and offers
        no tools; the run goes on)."""
        workspaces = self.workspaces
        if system is not None:
            self._record = system.record
        plan = executed_plan(self.spec.task)
        if plan is not None and system is not None:
            # Loaded only by a run that executes a plan (issue 24: start-up).
            from conclave.actors.planning.progress import PlanProgress

            self.plan_progress = PlanProgress(plan, system.record)
            self.plan_progress.started()
        if workspaces is not None and self._stack is not None:
            agents = list(workspaces.agents)
            await trio.to_thread.run_sync(workspaces.layout.create, agents)
            await self._seed(workspaces, agents)
            sandbox = self.spec.config.orchestrator.sandbox
            run_timeout = self.spec.config.orchestrator.run_timeout
            if run_timeout is not None:
                self._deadline = time.time() + run_timeout
            if sandbox.type is SandboxKind.DOCKER:
                from conclave.actors.sandbox.open import open_docker_engine

                self._engine = await self._stack.enter_async_context(open_docker_engine(sandbox))
            if system is not None:
                system.record(await self._sandbox_opened())
        if system is not None:
            await self._start_servers(system)

    async def _start_servers(self, system: ActorSystem) -> None:
        config = self.spec.config
        lent = self.spec.mcp
        if lent is not None and self._stack is not None:
            self.mcp = await self._stack.enter_async_context(lent.lend(system.record))
        elif config.mcp_servers or any(a.mcp_servers for a in config.agents):
            from conclave.actors.mcp.server import spawn_servers

            writes_open = self.workspaces is not None and self.workspaces.writes_open
            self.mcp = spawn_servers(
                system,
                config,
                self.server_grants(writes_open=writes_open),
                lambda agent: self.server_grants(writes_open=writes_open, agent=agent),
            )
            await self.mcp.settled()

    def server_grants(self, *, writes_open: bool, agent: str | None = None) -> ServerGrants:
        """What the run's confined MCP servers see: the context paths, read-only unless
        writable and ``writes_open``, the run's own directories in them covered; an
        ``agent``'s own servers also its workspace, writable, as its shell does."""
        from conclave.actors.mcp.confine import ServerGrants
        from conclave.actors.sandbox.protocol import Mount

        orchestrator = self.spec.config.orchestrator
        mounts = context_mounts(orchestrator.context_paths, writes_open=writes_open)
        workspaces = self.workspaces
        covers: tuple[Path, ...] = ()
        if workspaces is not None:
            covers = workspaces.own_dirs()
            if agent is not None:
                mounts = (Mount(path=workspaces.agents[agent].path, writable=True), *mounts)
        return ServerGrants(mounts=mounts, covers=covers, network=orchestrator.sandbox.network)

    async def _seed(self, workspaces: RunWorkspaces, agents: list[str]) -> None:
        """A run resuming a paused one starts from copies of its workspaces and of its
        answers' snapshots (published again under their labels): the files its agents made
        before the pause are there, and the paused run's directory is left as it was."""
        resume = self.spec.resume
        if resume is None or resume.workdir is None:
            return
        labels = [e.label for e in resume.history if isinstance(e, AnswerAdded)]
        paused = RunLayout(resume.workdir)
        copied = await trio.to_thread.run_sync(workspaces.layout.seed, paused, agents, labels)
        workspaces.published.update(copied)

    async def _sandbox_opened(self) -> SandboxOpened:
        """What the run says of its sandbox as it starts (see :class:`SandboxOpened`)."""
        from conclave.actors.sandbox.limits import nproc_flag, own_user_namespace
        from conclave.actors.sandbox.local import BWRAP_HELP, bubblewrap

        sandbox = self.spec.config.orchestrator.sandbox
        if sandbox.type is SandboxKind.DOCKER:
            removed = self._engine.orphans_removed if self._engine is not None else ()
            return SandboxOpened(
                at=trio.current_time(),
                sandbox=sandbox.type.value,
                confined=True,
                network=sandbox.network,
                orphans_removed=tuple(o.name for o in removed),
            )
        confined = await trio.to_thread.run_sync(bubblewrap) is not None
        warnings = []
        if not confined:
            warnings.append(
                "shell commands are unconfined: they run as you, can read and write whatever "
                "you can (~/.ssh included) and use the network; " + BWRAP_HELP
            )
        # Asked here, in a worker thread, so that no command waits for the probe.
        no_nproc = await trio.to_thread.run_sync(nproc_flag) is None
        if no_nproc and own_user_namespace(confined):
            warnings.append("this host's sh cannot set a process limit (ulimit): none is set")
        warning = "; ".join(warnings) or None
        return SandboxOpened(
            at=trio.current_time(),
            sandbox=sandbox.type.value,
            confined=confined,
            network=sandbox.network or not confined,
            warning=warning,
        )

    async def agent_tools(self, agent: str) -> AgentTooling:
        """Open ``agent``'s sandbox (closed when the services close) and make its executor,
        with its MCP tools, once :meth:`start` has run, every result redacted. Raises what
        opening the sandbox raises."""
        tooling = await self._builtin_tools(agent)
        tools = tooling.tools
        if tools is NO_TOOLS and self.plan_progress is not None:
            tools = self._progress_only(agent, self.plan_progress)
        servers = self.mcp.for_agent(agent) if self.mcp is not None else ()
        if servers:
            if tooling.workspace is not None and self.mcp is not None:
                shared = self.server_grants(writes_open=True)
                own = self.server_grants(writes_open=True, agent=agent)
                run_wide = self.mcp.shared

                async def regrant() -> None:
                    for state in servers:
                        await state.regrant(shared if state in run_wide else own)

                # The presenter's writes open its servers' too: they restart seeing them.
                tooling.workspace.when_writes_open.append(regrant)
            from conclave.actors.mcp.tools import with_mcp_tools

            tools = with_mcp_tools(
                tools,
                servers,
                agent=agent,
                mode=self.spec.mode,
                before_call=self.approval_gate(agent, Path.cwd()),
            )
        if tools is NO_TOOLS:
            return tooling
        return attrs.evolve(tooling, tools=redacting_tools(tools, self.redactor))

    async def _builtin_tools(self, agent: str) -> AgentTooling:
        workspaces = self.workspaces
        if workspaces is None or self._stack is None:
            return _NO_TOOLING
        # Imported here: they import the docker SDK, which a run without tools never needs.
        from conclave.actors.sandbox.open import open_sandbox
        from conclave.actors.tools.executor import DEFAULT_LIMITS, agent_tools

        workspace = workspaces.agents[agent]
        orchestrator = self.spec.config.orchestrator
        sandbox = await self._stack.enter_async_context(
            open_sandbox(
                orchestrator.sandbox,
                run_id=self.run_id,
                agent=agent,
                workspace=workspace.path,
                mounts=context_mounts(
                    orchestrator.context_paths, writes_open=workspace.writes_open
                ),
                run_dirs=workspace.run_dirs(),
                engine=self._engine,
                secrets=self.secrets,
                deadline=self._deadline,
            )
        )
        workspace.sandbox = sandbox
        # A command without a timeout of its own gets the configured one (which may exceed
        # the tools' default ceiling).
        shell_timeout = orchestrator.sandbox.shell_timeout
        limits = attrs.evolve(
            DEFAULT_LIMITS,
            shell_default_timeout=shell_timeout,
            shell_max_timeout=max(DEFAULT_LIMITS.shell_max_timeout, shell_timeout),
        )
        tools = agent_tools(
            agent=agent,
            mode=self.spec.mode,
            policy=PathPolicy(workspace, cwd=workspace.path),
            sandbox=sandbox,
            workspace=workspace.path,
            limits=limits,
            before_call=self.approval_gate(agent, workspace.path),
            extra=(self.plan_progress.tool,) if self.plan_progress is not None else (),
        )
        return AgentTooling(tools=tools, workspace=workspace)

    def _progress_only(self, agent: str, progress: PlanProgress) -> ToolExecutor:
        """An agent without tools executing a plan is offered ``update_plan`` alone: it
        touches no path, so its context grants none."""
        from conclave.actors.tools.executor import DEFAULT_LIMITS, AgentTools
        from conclave.actors.tools.paths import StaticGrants
        from conclave.actors.tools.spec import ToolContext

        here = Path.cwd()
        context = ToolContext(
            agent=agent,
            policy=PathPolicy(StaticGrants(()), cwd=here),
            sandbox=None,
            workspace=here,
            limits=DEFAULT_LIMITS,
            may_write=False,
        )
        return AgentTools([progress.tool], context=context, mode=self.spec.mode)

    def approval_gate(self, agent: str, workspace: Path) -> ToolApprovalGate | None:
        """``agent``'s ``before_call`` hook under the config's ``permissions``; ``None``
        when no call could ask or be denied (``bypass`` without deny rules)."""
        config = self.spec.config.permissions
        if config.mode is PermissionMode.BYPASS and not config.deny:
            return None
        return ToolApprovalGate(
            Permissions.from_config(config, declared_files=declared_files(self.spec.task)),
            self.spec.tool_approver or RefuseTools(),
            agent=agent,
            workspace=workspace,
            session=self.allowances,
            paused=self._clock_paused,
            record=self._record,
        )

    @contextlib.contextmanager
    def _clock_paused(self) -> Iterator[None]:
        clock = self.clock
        if clock is None:
            yield
            return
        clock.pause()
        try:
            yield
        finally:
            clock.resume()


def executed_plan(task: str) -> Plan | None:
    """The approved plan a run with this task executes (``None``: it executes none)."""
    quoted = read_execution_task(task)
    return parse_plan(quoted[0]) if quoted is not None else None


def declared_files(task: str) -> tuple[str, ...] | None:
    """The files the approved plan a run executes declares (``None``: the run executes no
    plan, or its plan declares none): under ``accept-edits`` a write to any other asks."""
    plan = executed_plan(task)
    return plan.declared_files() if plan is not None else None


def workdir_of(spec: RunSpec) -> Path:
    """Where the run's workspaces go: ``RunSpec.workdir``, else its log directory, else a
    new temporary directory (kept after the run: its ``final/`` is the deliverable)."""
    if spec.workdir is not None:
        return spec.workdir
    if spec.log_dir is not None:
        return spec.log_dir
    return Path(tempfile.mkdtemp(prefix="conclave-run-"))


def _plan(spec: RunSpec) -> tuple[RunLayout, tuple[Path, ...]]:
    """The working directory's layout (not made yet), and the run's own directories, to be
    cut out of any context path that holds them: the event log and the other agents'
    workspaces are not the user's files."""
    layout = RunLayout(workdir_of(spec))
    own = (layout.root, spec.log_dir)
    excluded = tuple(dict.fromkeys(Path(os.path.realpath(p)) for p in own if p is not None))
    return layout, excluded


def _tracker(
    spec: RunSpec, writable: tuple[ContextPath, ...], excluded: tuple[Path, ...]
) -> TrackerState:
    """The WriteTracker's state. A resumed run starts from the baseline its paused run kept
    (:mod:`actors.workspace.baseline_file`), so its writes cover the whole run."""
    kept = kept_baseline(spec.resume.workdir) if spec.resume and spec.resume.workdir else None
    if kept is None:
        return TrackerState(context_paths=writable, list_dir=spec.log_dir, excluded=excluded)
    return TrackerState(
        context_paths=writable,
        list_dir=spec.log_dir,
        excluded=tuple(dict.fromkeys((*excluded, *kept.excluded))),
        baseline=kept.index,
    )


@contextlib.asynccontextmanager
async def open_services(
    spec: RunSpec, *, secrets: RunSecrets = NO_SECRETS, redactor: Redactor = NO_REDACTION
) -> AsyncIterator[RunServices]:
    """The run's services for its lifetime (see the module docstring); every sandbox opened
    through them is closed on the way out, however the block ends. Nothing is made on disk
    or connected here: :meth:`RunServices.start` does that as the run starts. ``secrets``
    are kept out of the sandboxes' environment, ``redactor`` applied to every tool result."""
    run_id = spec.log_dir.name if spec.log_dir is not None else token_hex(6)
    orchestrator = spec.config.orchestrator
    if not orchestrator.agents_have_tools:
        async with contextlib.AsyncExitStack() as stack:  # holds a lent MCP session's loan
            yield RunServices(
                spec=spec, run_id=run_id, stack=stack, secrets=secrets, redactor=redactor
            )
        return
    agents = [a.id for a in spec.config.agents]
    layout, excluded = _plan(spec)
    writes_open = orchestrator.context_write_phase is ContextWritePhase.COORDINATION
    workspaces = RunWorkspaces(
        layout=layout,
        agents=agents,
        context_paths=orchestrator.context_paths,
        excluded=excluded,
        writes_open=writes_open,
    )
    # Plan mode writes nothing (its executors refuse every write): no writing phase to track.
    planning = spec.mode is CollaborationMode.PLAN
    writable = () if planning else tuple(c for c in orchestrator.context_paths if c.writable)
    tracker = _tracker(spec, writable, excluded) if writable else None
    async with contextlib.AsyncExitStack() as stack:
        yield RunServices(
            spec=spec,
            run_id=run_id,
            secrets=secrets,
            redactor=redactor,
            workspaces=workspaces,
            tracker=tracker,
            stack=stack,
        )
