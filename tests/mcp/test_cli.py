"""Through the real CLI: a scripted multi-agent run that lists and reads files and reads the git
log through MCP servers, a run whose server cannot start, ``conclave mcp list``, and config
problems reported like every other."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CONCLAVE = [str(Path(sys.executable).parent / "conclave")]


def conclave(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CONCLAVE, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def write_config(path: Path, fs: str, git: str, files: Path, repo: Path, extra: str = "") -> Path:
    path.write_text(
        f"""
orchestrator:
  context_paths: [{{path: {files}}}, {{path: {repo}}}]   # what the confined servers see
mcp_servers:
  - name: fs
    command: {fs}
    args: [{files}]
  - name: git
    command: {git}
    args: [--repository, {repo}]
agents:
  - id: lister
    backend:
      type: scripted
      tool_steps:
        - tool: mcp__fs__list_directory
          arguments: {{path: {files}}}
        - tool: mcp__git__git_log
          arguments: {{repo_path: {repo}, max_count: 1}}
  - id: reader
    backend:
      type: scripted
      tool_steps:
        - tool: mcp__fs__read_text_file
          arguments: {{path: {files / "notes.txt"}}}
{extra}"""
    )
    return path


def events(stdout: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def test_a_scripted_run_lists_and_reads_files_and_the_git_log_through_mcp(
    fs_server: str, git_server: str, files: Path, repo: Path, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "conf.yaml", fs_server, git_server, files, repo)

    done = conclave(
        "run", "List and read the files", "--config", str(config),
        "--output-format", "stream-json", cwd=tmp_path,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    lines = events(done.stdout)
    ready = {e["server"] for e in lines if e["type"] == "mcp_server_ready"}
    calls = {(e["agent"], e["tool"]): e for e in lines if e["type"] == "tool_call_finished"}
    assert ready == {"fs", "git"}
    assert calls[("lister", "mcp__fs__list_directory")]["ok"] is True
    assert "notes.txt" in str(calls[("lister", "mcp__fs__list_directory")]["output"])
    assert "the first commit" in str(calls[("lister", "mcp__git__git_log")]["output"])
    assert calls[("reader", "mcp__fs__read_text_file")]["output"] == "alpha notes\n"
    assert lines[-1]["type"] == "result" and lines[-1]["termination"] == "completed"


def test_the_mcp_example_runs_end_to_end_in_a_git_repository(
    fs_server: str, git_server: str, repo: Path
) -> None:
    (repo / "README.md").write_text("# the example's project\n")
    example = Path(__file__).parents[2] / "config" / "examples" / "mcp.yaml"
    servers = os.pathsep.join({str(Path(fs_server).parent), str(Path(git_server).parent)})
    env = {**os.environ, "PATH": servers + os.pathsep + os.environ["PATH"]}

    done = conclave(
        "run", "What is this project?", "--config", str(example), "--output-format",
        "stream-json", cwd=repo, env=env,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    lines = events(done.stdout)
    calls = {e["tool"]: e for e in lines if e["type"] == "tool_call_finished"}
    assert all(e["ok"] for e in calls.values()), calls
    assert "[FILE] README.md" in str(calls["mcp__fs__list_directory"]["output"])
    assert calls["mcp__fs__read_text_file"]["output"] == "# the example's project"  # head: 20
    assert "the first commit" in str(calls["mcp__git__git_log"]["output"])
    assert "mcp__git__git_status" in calls
    assert lines[-1]["termination"] == "completed"


def test_a_run_whose_server_cannot_start_goes_on_and_says_which_and_why(
    fs_server: str, git_server: str, files: Path, repo: Path, tmp_path: Path
) -> None:
    extra = """    mcp_servers:
      - name: broken
        command: no-such-mcp-server-anywhere
"""
    config = write_config(tmp_path / "conf.yaml", fs_server, git_server, files, repo, extra)

    done = conclave(
        "run", "Read the notes", "--config", str(config), "--output-format", "stream-json",
        cwd=tmp_path,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    lines = events(done.stdout)
    failed = [e for e in lines if e["type"] == "mcp_server_failed"]
    assert [(e["server"], e["gave_up"]) for e in failed] == [("reader/broken", False)]
    assert "no-such-mcp-server-anywhere" in str(failed[0]["reason"])
    assert lines[-1]["termination"] == "completed"


def test_mcp_list_starts_the_servers_lists_their_tools_read_only_or_not_and_stops_them(
    fs_server: str, git_server: str, files: Path, repo: Path, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "conf.yaml", fs_server, git_server, files, repo)

    done = conclave("mcp", "list", "--config", str(config), cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    rows = {
        line.split()[1]: line.split()[0] for line in done.stdout.splitlines() if line[:2] == "  "
    }
    assert rows["mcp__fs__read_text_file"] == "ro"
    assert rows["mcp__fs__write_file"] == "rw"
    assert rows["mcp__git__git_log"] == "ro"
    assert rows["mcp__git__git_commit"] == "rw"
    assert str(files) not in _processes()


def test_mcp_list_exits_1_naming_a_server_that_did_not_start(tmp_path: Path) -> None:
    config = tmp_path / "conf.yaml"
    config.write_text(
        "agents: [{id: a}]\nmcp_servers:\n  - name: ghost\n    command: no-such-mcp-server\n"
    )

    done = conclave("mcp", "list", "--config", str(config), cwd=tmp_path)

    assert done.returncode == 1
    assert "ghost: FAILED: the command 'no-such-mcp-server' is not found" in done.stdout


@pytest.mark.parametrize(
    ("server", "message"),
    [
        ("{name: fs, comand: x}", "mcp_servers[0].comand: unknown key 'comand'"),
        ("{name: fs}", "mcp_servers[0].command: the required key 'command' is missing"),
        (
            "{name: web, type: streamable-http, url: 'ftp://x'}",
            "mcp_servers[0].url: 'url' must be an http:// or https:// URL",
        ),
        ("{name: a__b, command: x}", "mcp_servers[0].name: MCP server name 'a__b' must be"),
        (
            "{name: web, type: streamable-htp, url: 'http://x'}",
            "did you mean 'streamable-http'?",
        ),
        ("{name: fs, command: x, trust: maybe}", "mcp_servers[0].trust: expected true or false"),
    ],
)
def test_a_bad_mcp_server_entry_is_reported_at_its_line_with_what_to_do(
    server: str, message: str, tmp_path: Path
) -> None:
    config = tmp_path / "conf.yaml"
    config.write_text(f"agents: [{{id: a}}]\nmcp_servers:\n  - {server}\n")

    done = conclave("validate", str(config), cwd=tmp_path)

    assert done.returncode == 2
    assert f"{config}:3:" in done.stderr
    assert message in done.stderr


def _processes() -> str:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                out.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
    return "\n".join(out)
