"""MCP servers as a run starts them: tools listed with their read-only flags, the environment,
failures to start, crashes and restarts, timeouts and cancellation, plan mode."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest
import trio

from conclave.actors.llm.protocol import ToolCall
from conclave.actors.mcp.events import McpServerFailed, McpServerReady
from conclave.actors.mcp.server import ServerStatus
from conclave.actors.mcp.tools import with_mcp_tools
from conclave.actors.tools.protocol import NO_TOOLS, ToolResult
from conclave.config.modes import CollaborationMode
from conclave.config.schema.mcp import McpToolFilter
from tests.mcp.conftest import open_started, stdio


async def call(tools: object, name: str, **arguments: object) -> ToolResult:
    execute = tools.execute  # type: ignore[attr-defined]
    result: ToolResult = await execute(
        ToolCall(id="c1", name=name, arguments=json.dumps(arguments))
    )
    return result


def names(tools: object) -> list[str]:
    return [s.name for s in tools.schemas()]  # type: ignore[attr-defined]


async def test_a_servers_tools_are_offered_as_mcp_server_tool_with_their_schemas(
    fs_server: str, files: Path
) -> None:
    async with open_started(stdio("fs", fs_server, str(files)), sees=(files,)) as started:
        tools = with_mcp_tools(NO_TOOLS, started.servers.all(), agent="a", mode=_DEFAULT)
        schemas = {s.name: s for s in tools.schemas()}

        assert "mcp__fs__read_text_file" in schemas
        assert "path" in schemas["mcp__fs__read_text_file"].parameters["properties"]
        result = await call(tools, "mcp__fs__list_directory", path=str(files))
        assert result.ok, result.error
        assert "notes.txt" in result.output and "plan.md" in result.output


async def test_read_only_comes_from_the_tools_read_only_hint(time_server: str) -> None:
    async with open_started(stdio("time", time_server)) as started:
        flags = {
            t.name: t.read_only
            for t in with_mcp_tools(
                NO_TOOLS, started.servers.all(), agent="a", mode=_DEFAULT
            ).schemas()
        }

    assert flags == {"mcp__time__get_current_time": True, "mcp__time__convert_time": True}


async def test_the_configs_read_only_list_overrides_the_hints(git_server: str, repo: Path) -> None:
    config = stdio("git", git_server, "--repository", str(repo), read_only=("git_log",))
    async with open_started(config, sees=(repo,)) as started:
        tools = with_mcp_tools(NO_TOOLS, started.servers.all(), agent="a", mode=_DEFAULT)
        flags = {s.name: s.read_only for s in tools.schemas()}

    assert flags["mcp__git__git_log"] is True
    assert flags["mcp__git__git_status"] is False  # its hint says read-only; the list does not
    assert flags["mcp__git__git_commit"] is False


async def test_allow_and_deny_choose_the_tools_offered(git_server: str, repo: Path) -> None:
    config = stdio(
        "git",
        git_server,
        "--repository",
        str(repo),
        tools=McpToolFilter(allow=("git_log", "git_status", "git_commit"), deny=("git_commit",)),
    )
    async with open_started(config, sees=(repo,)) as started:
        tools = with_mcp_tools(NO_TOOLS, started.servers.all(), agent="a", mode=_DEFAULT)
        offered = names(tools)
        refused = await call(tools, "mcp__git__git_commit", repo_path=str(repo), message="x")

    assert offered == ["mcp__git__git_status", "mcp__git__git_log"]
    assert not refused.ok and "no tool named 'mcp__git__git_commit'" in (refused.error or "")


async def test_a_git_tool_answers_from_the_repository(git_server: str, repo: Path) -> None:
    async with open_started(
        stdio("git", git_server, "--repository", str(repo)), sees=(repo,)
    ) as started:
        tools = with_mcp_tools(NO_TOOLS, started.servers.all(), agent="a", mode=_DEFAULT)
        result = await call(tools, "mcp__git__git_log", repo_path=str(repo), max_count=1)

    assert result.ok, result.error
    assert "the first commit" in result.output


async def test_a_stdio_server_gets_exactly_path_and_the_configs_env(
    everything_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-the-server-0123456789")
    config = stdio("every", everything_server, env={"GREETING": "hello"})
    async with open_started(config) as started:
        tools = with_mcp_tools(NO_TOOLS, started.servers.all(), agent="a", mode=_DEFAULT)
        result = await call(tools, "mcp__every__get-env")

    assert result.ok, result.error
    env = json.loads(result.output[result.output.index("{") :])
    assert env == {"PATH": os.environ["PATH"], "GREETING": "hello"}


async def test_plan_mode_offers_only_read_only_tools_and_refuses_the_others(
    fs_server: str, files: Path
) -> None:
    async with open_started(stdio("fs", fs_server, str(files)), sees=(files,)) as started:
        tools = with_mcp_tools(
            NO_TOOLS, started.servers.all(), agent="a", mode=CollaborationMode.PLAN
        )
        offered = names(tools)
        refused = await call(tools, "mcp__fs__write_file", path=str(files / "new.txt"), content="x")
        read = await call(tools, "mcp__fs__read_text_file", path=str(files / "notes.txt"))

    assert "mcp__fs__read_text_file" in offered
    assert "mcp__fs__write_file" not in offered
    assert not refused.ok and "plan mode is read-only" in (refused.error or "")
    assert "mcp__fs__write_file" in [s.name for s in tools.withheld()]
    assert not (files / "new.txt").exists()
    assert read.ok and read.output == "alpha notes\n"


async def test_a_server_that_never_starts_offers_nothing_and_says_why_with_its_stderr(
    tmp_path: Path,
) -> None:
    script = tmp_path / "broken-server"
    script.write_text('#!/bin/sh\necho "cannot open database: token $TOKEN refused" >&2\nexit 3\n')
    script.chmod(0o755)
    secret = "tok-0123456789abcdef"
    async with open_started(stdio("broken", str(script), env={"TOKEN": secret})) as started:
        state = started.state("broken")
        tools = with_mcp_tools(NO_TOOLS, started.servers.all(), agent="a", mode=_DEFAULT)
        failed = started.tap.of_type(McpServerFailed)

    assert state.status is ServerStatus.FAILED
    assert tools is NO_TOOLS
    assert len(failed) == 1 and failed[0].server == "broken" and not failed[0].gave_up
    assert "cannot open database" in failed[0].stderr
    assert secret not in failed[0].stderr and "[REDACTED]" in failed[0].stderr


async def test_a_command_that_does_not_exist_is_named(tmp_path: Path) -> None:
    async with open_started(stdio("ghost", "no-such-mcp-server-anywhere")) as started:
        failed = started.tap.of_type(McpServerFailed)

    assert "the command 'no-such-mcp-server-anywhere' is not found" in failed[0].reason


async def test_a_server_that_hangs_at_start_fails_after_its_startup_timeout(
    tmp_path: Path, quick_termination: None
) -> None:
    script = tmp_path / "silent-server"
    script.write_text("#!/bin/sh\nexec sleep 60\n")
    script.chmod(0o755)
    started_at = trio.current_time()
    async with open_started(stdio("silent", str(script), startup_timeout=1.0)) as started:
        failed = started.tap.of_type(McpServerFailed)
        waited = trio.current_time() - started_at

    assert "did not start within 1 s" in failed[0].reason
    assert waited < 10


async def test_a_call_that_takes_longer_than_call_timeout_is_cancelled_and_says_so(
    everything_server: str, quick_termination: None
) -> None:
    config = stdio("every", everything_server, call_timeout=0.5)
    async with open_started(config) as started:
        tools = with_mcp_tools(NO_TOOLS, started.servers.all(), agent="a", mode=_DEFAULT)
        before = trio.current_time()
        result = await call(
            tools, "mcp__every__trigger-long-running-operation", duration=30, steps=3
        )
        took = trio.current_time() - before
        after = await call(tools, "mcp__every__echo", message="still here")

    assert not result.ok
    assert "took longer than 0.5 s" in (result.error or "")
    assert took < 5
    assert after.ok and "still here" in after.output


async def test_cancelling_the_caller_cancels_the_mcp_request(
    everything_server: str, quick_termination: None
) -> None:
    async with open_started(stdio("every", everything_server)) as started:
        tools = with_mcp_tools(NO_TOOLS, started.servers.all(), agent="a", mode=_DEFAULT)
        before = trio.current_time()
        with trio.move_on_after(0.5):
            await call(tools, "mcp__every__trigger-long-running-operation", duration=30, steps=3)
        took = trio.current_time() - before
        after = await call(tools, "mcp__every__echo", message="next")

    assert took < 3
    assert after.ok


async def test_a_server_that_crashes_is_restarted_and_serves_the_next_call(
    fs_server: str, files: Path
) -> None:
    async with open_started(stdio("fs", fs_server, str(files)), sees=(files,)) as started:
        tools = with_mcp_tools(NO_TOOLS, started.servers.all(), agent="a", mode=_DEFAULT)
        first = server_pids(str(files))
        assert first
        kill(first)
        result = await call(tools, "mcp__fs__read_text_file", path=str(files / "notes.txt"))
        ready = started.tap.of_type(McpServerReady)
        second = server_pids(str(files))

    assert result.ok, result.error
    assert result.output == "alpha notes\n"
    assert [r.incarnation for r in ready] == [1, 2]
    assert second and not set(second) & set(first)


async def test_a_server_that_keeps_crashing_is_given_up_and_its_tools_say_why(
    fs_server: str, files: Path
) -> None:
    async with open_started(stdio("fs", fs_server, str(files)), sees=(files,)) as started:
        state = started.state("fs")
        tools = with_mcp_tools(NO_TOOLS, started.servers.all(), agent="a", mode=_DEFAULT)
        with trio.fail_after(30):
            while state.status is not ServerStatus.FAILED:
                kill(server_pids(str(files)))
                await trio.sleep(0.05)
        result = await call(tools, "mcp__fs__list_directory", path=str(files))
        failed = started.tap.of_type(McpServerFailed)

    assert failed and failed[-1].gave_up
    assert not result.ok and "given up" in (result.error or "")


def kill(pids: list[int]) -> None:
    """SIGKILL each of ``pids``; one that has already exited (its server crashed or a
    wrapper finished between the listing and the kill) is no longer there to kill."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)


def server_pids(marker: str) -> list[int]:
    """Processes whose command line holds ``marker`` (the directory a server serves)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker.encode() in argv and not argv[0].endswith(b"env"):
            found.append(int(entry.name))
    return found


_DEFAULT = CollaborationMode.DEFAULT
