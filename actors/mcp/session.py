"""MCP servers that outlive runs: a REPL session (or anything else that runs many runs) starts
its servers once and lends them to each run, as it shares its backend pool.

:func:`open_session_servers` runs an actor system of its own for the servers: the same
actors, supervisors, restarts, environment and timeouts as a run's own servers
(:mod:`actors.mcp.server`), spawned under its root. A run uses
:attr:`McpSession.servers` instead of spawning servers (its tools are made from them as
from its own), and holds :meth:`McpSession.lend` while it runs: on entry the run records
each server's state (up with its tools, or failed and why), so every run's log says which
servers it had; while it holds the loan, what happens to the servers (a restart, a server
given up) is recorded into the run too. Several runs may hold loans at once.

Calls go from the run's agent tasks straight to the SDK clients, which the session's tasks
own: cancelling a run's round cancels its MCP request, and a run that ends leaves the
servers as they are. Leaving the session (after its last run) stops the servers, as a run
stops its own; cancelling it cancels everything at once.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable

import trio

from conclave.actors.mcp.confine import ServerGrants, config_grants
from conclave.actors.mcp.events import McpServerFailed, McpServerReady
from conclave.actors.mcp.server import NO_SERVERS, McpServers, spawn_servers
from conclave.config.schema.root import ConclaveConfig
from conclave.runtime import Event, EventTap, open_actor_system

__all__ = ["McpSession", "open_session_servers"]

Record = Callable[[Event], None]


class _Loans:
    """The session system's tap: each server event to every run holding a loan."""

    hears_deliveries = False
    """Server events only (:func:`~runtime.eventlog.hears_deliveries`)."""

    def __init__(self) -> None:
        self.records: list[Record] = []

    def record(self, event: Event) -> None:
        if not isinstance(event, McpServerReady | McpServerFailed):
            return
        for record in tuple(self.records):
            try:
                record(event)
            except Exception:
                # A run that cannot record any more (its system closing) loses its loan;
                # the session and the other runs go on hearing their servers.
                self.records.remove(record)


class McpSession:
    """The session's servers; see the module docstring."""

    def __init__(self, servers: McpServers, loans: _Loans, grants: ServerGrants) -> None:
        self.servers = servers
        """What a run uses instead of spawning its own (``actors.mcp.tools.with_mcp_tools``)."""
        self._loans = loans
        self._grants = grants

    @contextlib.asynccontextmanager
    async def lend(self, record: Record) -> AsyncIterator[McpServers]:
        """The servers, for one run whose events go to ``record`` (its actor system's), once
        their first starts are over (each bounded by its ``startup_timeout``; cancelling the
        wait just ends it): their state then is recorded at once, and what happens to them
        until the block ends."""
        await self.servers.settled()
        for state in self.servers.all():
            event = state.as_event()
            if event is not None:
                record(event)
        self._loans.records.append(record)
        try:
            yield self.servers
        finally:
            if record in self._loans.records:
                self._loans.records.remove(record)
            # A run's presenter may have opened its writes to them: the next run starts
            # from the session's grants (read-only) again.
            with trio.CancelScope(shield=True):
                for state in self.servers.all():
                    await state.regrant(self._grants)


@contextlib.asynccontextmanager
async def open_session_servers(
    config: ConclaveConfig, *, record: Record | None = None
) -> AsyncIterator[McpSession]:
    """Start ``config``'s servers (top level and per agent) for the block's duration; the
    block is entered at once, while they start (the first :meth:`McpSession.lend` waits for
    them), so a REPL's prompt does not wait for a slow server. ``record`` (if given) hears
    every server event, as the session's own log would. No servers configured: a session that
    lends none, and no actor system is opened."""
    loans = _Loans()
    grants = config_grants(config)
    if not config.mcp_servers and not any(a.mcp_servers for a in config.agents):
        yield McpSession(NO_SERVERS, loans, grants)
        return
    taps: list[EventTap] = [loans] if record is None else [loans, _Tap(record)]
    async with open_actor_system(name="mcp-session", taps=taps) as system:
        yield McpSession(spawn_servers(system, config, grants), loans, grants)


class _Tap:
    """Every event of the session's system, to the session's own ``record``."""

    def __init__(self, record: Record) -> None:
        self._record = record

    def record(self, event: Event) -> None:
        self._record(event)
