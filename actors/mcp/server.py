"""Each configured MCP server as a supervised actor: started with the run, restarted when it
crashes (at most :data:`RESTARTS` allows), stopped after the agents.

:func:`spawn_servers` puts one supervisor per server under the actor system's root, each with
one :class:`McpServerActor`, before the run's own supervisor starts; the root stops its
children in reverse start order, so the agents stop first and a call in flight still finds its
server. The actor owns the connection (:mod:`actors.mcp.connection`) in a background task for
its whole incarnation; calls do not go through its mailbox but straight to the SDK client from
the calling agent's task, so cancelling the round cancels the MCP request (the SDK sends the
server ``notifications/cancelled``) and a call costs no extra hops.

What survives a restart is run-owned (:class:`McpServerState`): the tools listed at the first
start (what the agents were offered), whether the server ever came up, and what a confined
stdio server may see (:class:`~actors.mcp.confine.ServerGrants`). A confined server's mounts
are fixed when its process starts, so new grants (the presenter's writes opening) restart the
process (:meth:`McpServerState.regrant`), within the same incarnation: not a crash.

- A server that cannot start (no such command, a crash or hang before its tools are listed)
  records :class:`McpServerFailed` with the reason and its redacted stderr, and stops; its
  tools are not offered, and nothing else of the run is affected.
- A server that goes away after it was up (its process exited, its connection dropped) crashes
  its actor, which its supervisor restarts: the new incarnation reconnects. Calls made
  meanwhile wait for it, within their own timeout.
- Too many restarts within the period: the supervisor gives up, the failure is recorded and
  the server's tools answer every call with the reason. The run goes on.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable

import attrs
import trio

from conclave.actors.llm.redaction import redact
from conclave.actors.mcp.confine import NotConfinable, ServerGrants
from conclave.actors.mcp.connection import (
    Connection,
    HttpRefused,
    ListedTool,
    StderrTail,
    open_connection,
    secrets_of,
)
from conclave.actors.mcp.events import McpServerFailed, McpServerReady
from conclave.config.schema.mcp import McpServerConfig, StdioMcpServer, StreamableHttpMcpServer
from conclave.config.schema.root import ConclaveConfig
from conclave.runtime import (
    Actor,
    ActorContext,
    ActorSystem,
    Address,
    Envelope,
    Event,
    Restart,
    StopSignal,
    SupervisorSpec,
)

__all__ = [
    "RESTARTS",
    "McpServerActor",
    "McpServerState",
    "McpServers",
    "ServerDown",
    "ServerStatus",
    "spawn_servers",
    "tool_name",
]

RESTARTS = SupervisorSpec(intensity=3, period=60.0)
"""A server restarted a 4th time within a minute is given up."""
SHUTDOWN_S = 10.0
"""A graceful stop's bound: the SDK closes stdin, waits 2 s, then SIGTERM, 2 s, SIGKILL."""
KILL_TIMEOUT_S = 5.0


def tool_name(server: str, tool: str) -> str:
    """What agents call a server's tool."""
    return f"mcp__{server}__{tool}"


class ServerStatus(enum.Enum):
    STARTING = "starting"
    UP = "up"
    RESTARTING = "restarting"
    FAILED = "failed"
    """Never started, or given up after too many restarts."""


class ServerDown(Exception):
    """A call cannot be made: the server failed, or did not come back in time. The message
    is for the model."""


class _Lost(Exception):
    """The server went away while up: its actor crashes, and is restarted."""


class McpServerState:
    """One server's run-owned state, shared by its incarnations and the tools that call it."""

    def __init__(
        self,
        *,
        key: str,
        config: McpServerConfig,
        record: Callable[[Event], None],
        grants: ServerGrants,
    ) -> None:
        self.key = key
        """The server's name, or ``agent/name`` for one agent's."""
        self.config = config
        self.record = record
        self.grants = grants
        """What the server sees when confined; its process starts with them."""
        self._regranting = False
        self.status = ServerStatus.STARTING
        self.tools: tuple[ListedTool, ...] = ()
        """As listed at the first start: what agents are offered."""
        self.failure: str | None = None
        self.last_loss: str | None = None
        """Why the server last went away while up."""
        self.stderr = StderrTail()
        self.settled = trio.Event()
        """Set when the first start is over, up or failed."""
        self.incarnation = 0
        """The incarnation that came up last (0: none yet)."""
        self.gave_up = False
        """Failed after it had run (restarted too often), rather than never started."""
        self._connection: Connection | None = None
        self._changed = trio.Event()

    @property
    def address(self) -> Address:
        return Address("mcp", self.key)

    def secrets(self) -> tuple[str, ...]:
        return secrets_of(self.config)

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def up(self, connection: Connection, incarnation: int) -> None:
        if self.status is ServerStatus.STARTING:
            self.tools = connection.tools
        self._connection = connection
        self.status = ServerStatus.UP
        self.incarnation = incarnation
        self.settled.set()
        self._notify()
        self.record(self._ready())

    def _ready(self) -> McpServerReady:
        offered = tuple(tool_name(self.config.name, t.name) for t in self.offered())
        return McpServerReady(
            at=trio.current_time(), server=self.key, tools=offered, incarnation=self.incarnation
        )

    def _failed(self) -> McpServerFailed:
        return McpServerFailed(
            at=trio.current_time(),
            server=self.key,
            reason=redact(self.failure or "", self.secrets()),
            stderr=self.stderr.text(self.secrets()),
            gave_up=self.gave_up,
        )

    def as_event(self) -> McpServerReady | McpServerFailed | None:
        """The event that says how the server is now (up, or failed and why); ``None`` while
        it starts or restarts. A run lent a session's servers records these first."""
        if self.status is ServerStatus.UP:
            return self._ready()
        if self.status is ServerStatus.FAILED:
            return self._failed()
        return None

    def down(self) -> None:
        self._connection = None
        if self.status is ServerStatus.UP:
            self.status = ServerStatus.RESTARTING
            self._notify()

    def fail(self, reason: str, *, gave_up: bool) -> None:
        if self.status is ServerStatus.FAILED:
            return
        self._connection = None
        self.status = ServerStatus.FAILED
        self.failure = reason
        self.gave_up = gave_up
        self.settled.set()
        self._notify()
        self.record(self._failed())

    @property
    def confined(self) -> bool:
        """Whether the server runs confined (a stdio server the config does not trust)."""
        return isinstance(self.config, StdioMcpServer) and not self.config.trust

    async def regrant(self, grants: ServerGrants) -> None:
        """Let the server see ``grants`` from now on: its process is restarted with them
        (calls made meanwhile wait for it), and this returns once it is up again or has
        failed, within its ``startup_timeout``. Nothing to do for a server that is not
        confined or already has them. Cancelled, the restart goes on."""
        if not self.confined or grants == self.grants:
            return
        self.grants = grants
        connection = self._connection
        if connection is None or self.status is not ServerStatus.UP:
            return  # not running now: its next start uses the new grants
        self._regranting = True
        connection.mark_lost()
        with trio.move_on_after(self.config.startup_timeout + SHUTDOWN_S):
            while not self._restarted(connection):
                await self._changed.wait()

    def _restarted(self, old: Connection) -> bool:
        """Whether the process that ``old`` talked to has been replaced, or has failed."""
        if self.status is ServerStatus.FAILED:
            return True
        return self.status is ServerStatus.UP and self._connection is not old

    def take_regrant(self) -> bool:
        """Whether the connection was ended to restart with new grants (then cleared)."""
        regranting, self._regranting = self._regranting, False
        return regranting

    def offered(self) -> tuple[ListedTool, ...]:
        """The listed tools the config's ``tools`` filter lets through."""
        return tuple(t for t in self.tools if self.config.tools.offers(t.name))

    async def connection(self, deadline: float) -> Connection:
        """The live connection, waiting (until ``deadline``) while the server restarts;
        raises :class:`ServerDown` if it failed or does not come back in time."""
        while True:
            connection = self._connection
            if connection is not None and not connection.lost.is_set():
                return connection
            if self.status is ServerStatus.FAILED:
                raise ServerDown(f"the MCP server {self.key!r} is not available: {self.failure}")
            changed = self._changed
            with trio.move_on_at(deadline):
                await changed.wait()
                continue
            raise ServerDown(
                f"the MCP server {self.key!r} is restarting and did not come back in time; "
                "try the call again later"
            )


class McpServerActor(Actor):
    """Owns one connection per incarnation; see the module docstring. It takes no messages:
    calls reach the SDK client directly."""

    def __init__(self, context: ActorContext, *, state: McpServerState) -> None:
        super().__init__(context)
        self.state = state

    async def started(self) -> None:
        self.context.start_soon(self._serve)

    async def handle(self, envelope: Envelope) -> None:
        return None

    async def _serve(self) -> None:
        state = self.state
        while True:
            state.stderr = StderrTail()
            ever_up = state.status is not ServerStatus.STARTING
            try:
                async with open_connection(state.config, state.stderr, state.grants) as connection:
                    state.up(connection, self.context.incarnation)
                    await connection.lost.wait()
            except Exception as exc:
                state.down()
                if not ever_up:
                    state.fail(describe_failure(exc, state), gave_up=False)
                    self.context.stop()
                    return
                state.last_loss = describe_failure(exc, state)
                raise _Lost(state.last_loss) from exc
            state.down()
            if state.take_regrant():
                continue  # ended on purpose: start again with the new grants
            tail = state.stderr.text(state.secrets())
            last = tail.splitlines()[-1] if tail else ""
            state.last_loss = "its connection closed (the process exited)" + (
                f"; stderr: {last}" if last else ""
            )
            raise _Lost(f"the MCP server {state.key!r} went away: {state.last_loss}")


_CONFINED_HINT = (
    " (it ran confined: it sees the system, its own installation and the context paths, "
    "with no home directory; give what it needs as a context path, install it with npm "
    "install -g or pip rather than npx or uvx, which fetch at start, or set trust: true)"
)


def describe_failure(exc: BaseException, state: McpServerState) -> str:
    """Why a server could not start or went away, in a sentence for people and models; a
    confined server's says what it could see."""
    reason = _describe(exc, state.config)
    if state.confined and not isinstance(_lone(exc), NotConfinable | FileNotFoundError):
        return reason + _CONFINED_HINT
    return reason


def _lone(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException, config: McpServerConfig) -> str:
    exc = _lone(exc)
    if isinstance(exc, NotConfinable):
        return str(exc)
    if isinstance(exc, trio.TooSlowError):
        return f"it did not start within {config.startup_timeout:g} s (startup_timeout)"
    if isinstance(exc, FileNotFoundError) and isinstance(config, StdioMcpServer):
        return str(exc)
    if isinstance(exc, HttpRefused):
        return str(exc)
    if isinstance(config, StreamableHttpMcpServer):
        import httpx2

        if isinstance(exc, httpx2.ConnectError):
            return f"cannot reach {config.url} ({exc}): is the server running, and is 'url' right?"
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"


@attrs.frozen(kw_only=True)
class McpServers:
    """The run's servers: shared ones by name, each agent's by ``agent/name``."""

    shared: tuple[McpServerState, ...] = ()
    per_agent: dict[str, tuple[McpServerState, ...]] = attrs.field(factory=dict, hash=False)

    def all(self) -> tuple[McpServerState, ...]:
        return self.shared + tuple(s for states in self.per_agent.values() for s in states)

    def for_agent(self, agent: str) -> tuple[McpServerState, ...]:
        return self.shared + self.per_agent.get(agent, ())

    async def settled(self) -> None:
        """Until every server's first start is over (each bounded by its startup_timeout)."""
        for state in self.all():
            await state.settled.wait()


NO_SERVERS = McpServers()


def spawn_servers(
    system: ActorSystem,
    config: ConclaveConfig,
    grants: ServerGrants,
    agent_grants: Callable[[str], ServerGrants] | None = None,
) -> McpServers:
    """One supervisor and actor per configured server, started now under ``system``'s root
    (before the run's own supervisor, so stopped after it), confined ones seeing ``grants``,
    or, for an agent's own servers, ``agent_grants(agent)`` when given. Await
    :meth:`McpServers.settled` for the first starts."""
    if not config.mcp_servers and not any(a.mcp_servers for a in config.agents):
        return NO_SERVERS
    shared = tuple(_spawn(system, s.name, s, grants) for s in config.mcp_servers)
    own = agent_grants or (lambda _agent: grants)
    per_agent = {
        agent.id: tuple(
            _spawn(system, f"{agent.id}/{s.name}", s, own(agent.id)) for s in agent.mcp_servers
        )
        for agent in config.agents
        if agent.mcp_servers
    }
    return McpServers(shared=shared, per_agent=per_agent)


def spawn_listed(
    system: ActorSystem, servers: Iterable[tuple[str, McpServerConfig]], grants: ServerGrants
) -> McpServers:
    """Servers by key, as ``conclave mcp list`` starts them."""
    return McpServers(shared=tuple(_spawn(system, key, c, grants) for key, c in servers))


def _spawn(
    system: ActorSystem, key: str, config: McpServerConfig, grants: ServerGrants
) -> McpServerState:
    state = McpServerState(key=key, config=config, record=system.record, grants=grants)
    supervisor, child = system.supervisor_child(
        f"mcp-supervisor:{key}", RESTARTS, restart=Restart.TEMPORARY
    )
    system.spawn(
        state.address,
        lambda ctx: McpServerActor(ctx, state=state),
        restart=Restart.TRANSIENT,
        shutdown=SHUTDOWN_S,
        kill_timeout=KILL_TIMEOUT_S,
        supervisor=supervisor,
    )

    async def supervise(stop: StopSignal, incarnation: int) -> None:
        # A server restarted too often is given up; the run goes on without it.
        try:
            await child.run(stop, incarnation)
        except Exception as exc:
            why = state.last_loss or _cause(exc)
            state.fail(
                f"it went away more than {RESTARTS.intensity} times within "
                f"{RESTARTS.period:g} s and was given up; last: {why}",
                gave_up=True,
            )

    system.root.start_child(attrs.evolve(child, run=supervise))
    return state


def _cause(exc: BaseException) -> str:
    exc = _lone(exc)
    return f"{type(exc).__name__}: {exc}"
