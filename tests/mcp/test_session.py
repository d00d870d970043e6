"""MCP servers that outlive runs (actors/mcp/session.py): started once for a session, lent to
one run after another (same process, no new start), each run told the servers' state as it
begins and what happens to them while it runs; stopped with the session."""

from __future__ import annotations

import json
from pathlib import Path

import trio

from conclave.actors.llm.protocol import ToolCall
from conclave.actors.mcp.events import McpServerFailed, McpServerReady
from conclave.actors.mcp.server import McpServers
from conclave.actors.mcp.session import open_session_servers
from conclave.actors.mcp.tools import with_mcp_tools
from conclave.actors.tools.protocol import NO_TOOLS, ToolResult
from conclave.config.modes import CollaborationMode
from conclave.config.schema.agents import AgentConfig
from conclave.config.schema.context import ContextPath
from conclave.config.schema.mcp import McpServerConfig
from conclave.config.schema.orchestrator import OrchestratorConfig
from conclave.config.schema.root import ConclaveConfig
from conclave.runtime import Event, MemoryTap, open_actor_system
from tests.mcp.conftest import stdio
from tests.mcp.test_servers import kill, server_pids


def _config(*servers: McpServerConfig, sees: Path | None = None) -> ConclaveConfig:
    """A config of ``servers``; a session's confined servers see its context path ``sees``."""
    context = (ContextPath(path=sees),) if sees is not None else ()
    return ConclaveConfig(
        agents=(AgentConfig(id="a"),),
        mcp_servers=servers,
        orchestrator=OrchestratorConfig(context_paths=context),
    )


async def _read(servers: McpServers, files: Path) -> ToolResult:
    tools = with_mcp_tools(
        NO_TOOLS, servers.for_agent("a"), agent="a", mode=CollaborationMode.DEFAULT
    )
    arguments = json.dumps({"path": str(files / "notes.txt")})
    return await tools.execute(
        ToolCall(id="c1", name="mcp__fs__read_text_file", arguments=arguments)
    )


async def test_two_runs_one_after_the_other_use_one_server_process(
    fs_server: str, files: Path
) -> None:
    session_events = MemoryTap()
    config = _config(stdio("fs", fs_server, str(files)), sees=files)
    async with open_session_servers(config, record=session_events.record) as session:
        pids = []
        results = []
        for _ in range(2):
            run = MemoryTap()
            async with (
                open_actor_system(name="run", taps=[run]) as system,
                session.lend(system.record) as servers,
            ):
                results.append(await _read(servers, files))
                pids.append(server_pids(str(files)))
            assert [e.incarnation for e in run.of_type(McpServerReady)] == [1]

    assert [(r.ok, r.output) for r in results] == [(True, "alpha notes\n")] * 2
    assert pids[0] and pids[0] == pids[1]
    assert len(session_events.of_type(McpServerReady)) == 1  # started once
    assert server_pids(str(files)) == []  # stopped with the session


async def test_a_run_hears_what_happens_to_a_lent_server_while_it_runs(
    fs_server: str, files: Path
) -> None:
    async with open_session_servers(
        _config(stdio("fs", fs_server, str(files)), sees=files)
    ) as session:
        run = MemoryTap()
        async with (
            open_actor_system(name="run", taps=[run]) as system,
            session.lend(system.record) as servers,
        ):
            kill(server_pids(str(files)))
            result = await _read(servers, files)  # waits for the restart
        later = MemoryTap()
        async with session.lend(later.record):
            pass

    assert result.ok, result.error
    assert [e.incarnation for e in run.of_type(McpServerReady)] == [1, 2]
    assert [e.incarnation for e in later.of_type(McpServerReady)] == [2]


async def test_a_server_that_could_not_start_is_reported_to_every_run_it_is_lent_to(
    tmp_path: Path,
) -> None:
    async with open_session_servers(_config(stdio("ghost", "no-such-mcp-server"))) as session:
        runs = [MemoryTap(), MemoryTap()]
        for run in runs:
            async with session.lend(run.record) as servers:
                assert (
                    with_mcp_tools(
                        NO_TOOLS, servers.all(), agent="a", mode=CollaborationMode.DEFAULT
                    )
                    is NO_TOOLS
                )

    for run in runs:
        failed = run.of_type(McpServerFailed)
        assert [(e.server, e.gave_up) for e in failed] == [("ghost", False)]
        assert "'no-such-mcp-server' is not found" in failed[0].reason


async def test_a_run_whose_recording_fails_loses_its_loan_and_the_others_keep_theirs(
    fs_server: str, files: Path
) -> None:
    heard: list[Event] = []
    restarted = trio.Event()
    closed = trio.Event()

    def other(event: Event) -> None:
        heard.append(event)
        if isinstance(event, McpServerReady) and event.incarnation == 2:
            restarted.set()

    def closing(_event: Event) -> None:
        if closed.is_set():
            raise RuntimeError("the run's system is closed")

    async with (
        open_session_servers(_config(stdio("fs", fs_server, str(files)), sees=files)) as session,
        session.lend(other),
        session.lend(closing),
    ):
        closed.set()
        kill(server_pids(str(files)))
        with trio.fail_after(30):
            await restarted.wait()

    assert [e.incarnation for e in heard if isinstance(e, McpServerReady)] == [1, 2]


async def test_a_config_without_servers_opens_nothing_and_lends_none() -> None:
    async with (
        open_session_servers(_config()) as session,
        session.lend(MemoryTap().record) as servers,
    ):
        assert servers.all() == ()
