"""The local sandbox: a process group in the workspace, a scrubbed environment, and
bubblewrap's confinement where it works."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from conclave.actors.sandbox import Mount, limits, local, open_sandbox
from conclave.actors.sandbox.env_policy import policy_environment
from conclave.actors.sandbox.local import LocalSandbox
from conclave.config.schema.sandbox import SandboxConfig, SandboxEnv


def plain(workspace: Path, *, mounts: tuple[Mount, ...] = (), limit: int = 1 << 20) -> LocalSandbox:
    return LocalSandbox(
        workspace=workspace,
        mounts=mounts,
        config=SandboxConfig(max_output_bytes=limit),
        use_bubblewrap=False,
    )


def confined(workspace: Path, *, mounts: tuple[Mount, ...] = ()) -> LocalSandbox:
    sandbox = LocalSandbox(workspace=workspace, mounts=mounts, config=SandboxConfig())
    assert sandbox.confined
    return sandbox


def sleeping(seconds: str) -> list[int]:
    """Host processes, zombies aside, running ``sleep SECONDS`` (not a shell or a bwrap
    whose command line merely mentions it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if argv[:2] == [b"sleep", seconds.encode()] and state != "Z":
            found.append(int(entry.name))
    return found


def until(condition: Callable[[], bool], seconds: float = 10) -> bool:
    """Whether ``condition`` holds within ``seconds`` (polled: another process decides)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def killed(seconds: str) -> bool:
    """Whether every ``sleep SECONDS`` is gone within a second: SIGKILL is sent before the
    call returns, but the kernel tears a killed process down after it (such a process runs
    no code of its own)."""
    return until(lambda: not sleeping(seconds), 1.0)


def duration() -> str:
    """A ``sleep`` duration no other process uses, to find that sleep on the host."""
    return f"{30 + secrets.randbelow(10**6) / 10**6:.6f}"


# --- output, exit code, working directory ----------------------------------------------


async def test_stdout_and_stderr_interleave_in_the_order_written(workspace: Path) -> None:
    outcome = await plain(workspace).run_shell(
        "echo one; echo two >&2; echo three", cwd=workspace, timeout=10
    )
    assert outcome.output == "one\ntwo\nthree\n"


async def test_the_exit_code_is_the_commands(workspace: Path) -> None:
    outcome = await plain(workspace).run_shell("exit 7", cwd=workspace, timeout=10)
    assert (outcome.exit_code, outcome.timed_out) == (7, False)


async def test_the_command_runs_in_the_given_directory(workspace: Path) -> None:
    (workspace / "sub").mkdir()
    outcome = await plain(workspace).run_shell("pwd", cwd=workspace / "sub", timeout=10)
    assert outcome.output.strip() == str(workspace / "sub")


async def test_output_past_the_cap_is_counted_not_kept(workspace: Path) -> None:
    outcome = await plain(workspace, limit=10).run_shell(
        "printf '%0100d' 0", cwd=workspace, timeout=10
    )
    assert (outcome.output, outcome.truncated_bytes) == ("0" * 10, 90)


# --- the environment ----------------------------------------------------------------------


def test_every_api_key_token_and_secret_is_scrubbed() -> None:
    environ = {
        "OPENAI_API_KEY": "k",
        "ANTHROPIC_API_KEY": "k",
        "GITHUB_TOKEN": "t",
        "CLIENT_SECRET": "s",
        "AWS_SECRET_ACCESS_KEY": "s",
        "PGPASSWORD": "p",
        "PATH": "/bin",
        "HOME": "/home/me",
    }
    assert policy_environment(environ, SandboxEnv()) == {"PATH": "/bin", "HOME": "/home/me"}


def test_env_allow_passes_a_variable_whose_name_looks_secret() -> None:
    environ = {"GITHUB_TOKEN": "t", "NPM_TOKEN": "n", "PATH": "/bin"}
    policy = SandboxEnv(allow=("GITHUB_TOKEN",))
    assert policy_environment(environ, policy) == {"GITHUB_TOKEN": "t", "PATH": "/bin"}


def test_env_deny_withholds_variables_by_pattern() -> None:
    environ = {"AWS_PROFILE": "prod", "AWS_REGION": "eu", "KUBECONFIG": "/k", "PATH": "/bin"}
    policy = SandboxEnv(deny=("AWS_*", "KUBECONFIG"))
    assert policy_environment(environ, policy) == {"PATH": "/bin"}


def test_env_allow_wins_over_deny_so_deny_all_allow_some_passes_only_those() -> None:
    environ = {"PATH": "/bin", "LANG": "C", "EDITOR": "vi", "SSH_AUTH_SOCK": "/s"}
    policy = SandboxEnv(allow=("PATH", "LANG"), deny=("*",))
    assert policy_environment(environ, policy) == {"PATH": "/bin", "LANG": "C"}


async def test_a_command_gets_an_allowed_variable_and_not_a_denied_one(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "gh-for-the-command")
    monkeypatch.setenv("AWS_PROFILE", "prod-profile")
    config = SandboxConfig(env=SandboxEnv(allow=("GITHUB_TOKEN",), deny=("AWS_*",)))
    sandbox = LocalSandbox(workspace=workspace, mounts=(), config=config, use_bubblewrap=False)
    outcome = await sandbox.run_shell("env", cwd=workspace, timeout=10)
    assert "GITHUB_TOKEN=gh-for-the-command" in outcome.output
    assert "prod-profile" not in outcome.output


async def test_a_command_does_not_see_the_api_keys_of_the_process(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-do-not-leak")
    monkeypatch.setenv("DEPLOY_TOKEN", "do-not-leak")
    outcome = await plain(workspace).run_shell("env", cwd=workspace, timeout=10)
    assert "do-not-leak" not in outcome.output
    assert "PATH=" in outcome.output


# --- killed whole -------------------------------------------------------------------------


async def test_a_timeout_kills_the_command_and_everything_it_started(workspace: Path) -> None:
    seconds = duration()
    outcome = await plain(workspace).run_shell(
        f"sleep {seconds} & sleep {seconds}", cwd=workspace, timeout=0.5
    )
    assert (outcome.exit_code, outcome.timed_out) == (None, True)
    assert killed(seconds)


async def test_cancellation_kills_the_command_and_everything_it_started(workspace: Path) -> None:
    seconds = duration()
    sandbox = plain(workspace)
    with trio.move_on_after(0.5) as scope:
        await sandbox.run_shell(f"sleep {seconds} & sleep {seconds}", cwd=workspace, timeout=60)
    assert scope.cancelled_caught
    assert killed(seconds)


async def test_a_process_left_in_the_background_ends_with_the_call(workspace: Path) -> None:
    seconds = duration()
    outcome = await plain(workspace).run_shell(
        f"sleep {seconds} & echo started", cwd=workspace, timeout=60
    )
    assert (outcome.output, outcome.exit_code) == ("started\n", 0)
    assert killed(seconds)


async def test_a_process_that_left_the_group_cannot_hold_the_call_open(workspace: Path) -> None:
    seconds = duration()
    sandbox = plain(workspace)
    try:
        with trio.fail_after(10):
            outcome = await sandbox.run_shell(
                f"setsid sleep {seconds} & echo started", cwd=workspace, timeout=60
            )
    finally:
        for pid in sleeping(seconds):  # without bubblewrap it escapes: clean up after it
            os.kill(pid, signal.SIGKILL)
    assert (outcome.output, outcome.exit_code) == ("started\n", 0)


async def test_a_missing_directory_is_exit_126_saying_so(workspace: Path) -> None:
    outcome = await plain(workspace).run_shell("true", cwd=workspace / "gone", timeout=10)
    assert outcome.exit_code == 126
    assert str(workspace / "gone") in outcome.output


async def test_a_closed_sandbox_runs_nothing(workspace: Path) -> None:
    sandbox = plain(workspace)
    await sandbox.aclose()
    with pytest.raises(RuntimeError, match="closed sandbox"):
        await sandbox.run_shell("true", cwd=workspace, timeout=10)


async def test_without_pidfds_the_command_is_waited_for_in_a_thread(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(os, "pidfd_open")  # as on macOS
    outcome = await plain(workspace).run_shell("exit 5", cwd=workspace, timeout=10)
    assert outcome.exit_code == 5


# --- refusal without bubblewrap -----------------------------------------------------------


async def test_without_bubblewrap_read_only_paths_refuse_the_shell_saying_how_to_fix_it(
    workspace: Path, tmp_path: Path
) -> None:
    sandbox = plain(workspace, mounts=(Mount(path=tmp_path / "context", writable=False),))
    refusal = sandbox.refusal()
    assert refusal is not None
    assert str(tmp_path / "context") in refusal
    assert "apt-get install bubblewrap" in refusal
    with pytest.raises(PermissionError, match="run_shell is refused: read-only paths"):
        await sandbox.run_shell("true", cwd=workspace, timeout=10)


def test_without_bubblewrap_writable_paths_alone_allow_the_shell(
    workspace: Path, tmp_path: Path
) -> None:
    sandbox = plain(workspace, mounts=(Mount(path=tmp_path, writable=True),))
    assert sandbox.refusal() is None


# --- bubblewrap ---------------------------------------------------------------------------


async def test_bubblewrap_allows_the_shell_with_read_only_paths(
    bwrap: str, workspace: Path, tmp_path: Path
) -> None:
    context = tmp_path / "context"
    context.mkdir()
    assert confined(workspace, mounts=(Mount(path=context, writable=False),)).refusal() is None


async def test_bubblewrap_keeps_the_root_read_only(bwrap: str, workspace: Path) -> None:
    outcome = await confined(workspace).run_shell(
        "touch /usr/conclave-escape", cwd=workspace, timeout=10
    )
    assert outcome.exit_code != 0
    assert "Read-only file system" in outcome.output


async def test_bubblewrap_lets_the_workspace_be_written(bwrap: str, workspace: Path) -> None:
    outcome = await confined(workspace).run_shell("echo hi > made.txt", cwd=workspace, timeout=10)
    assert outcome.exit_code == 0
    assert (workspace / "made.txt").read_text() == "hi\n"


async def test_bubblewrap_mounts_are_writable_only_when_writable(
    bwrap: str, workspace: Path, tmp_path: Path
) -> None:
    read_only, writable = tmp_path / "ro", tmp_path / "rw"
    read_only.mkdir()
    writable.mkdir()
    (read_only / "kept").write_text("x")
    sandbox = confined(
        workspace,
        mounts=(Mount(path=read_only, writable=False), Mount(path=writable, writable=True)),
    )
    refused = await sandbox.run_shell(
        f"cat {read_only}/kept && rm {read_only}/kept", cwd=workspace, timeout=10
    )
    allowed = await sandbox.run_shell(f"echo y > {writable}/new", cwd=workspace, timeout=10)
    assert "x" in refused.output and "Read-only file system" in refused.output
    assert (read_only / "kept").exists()
    assert allowed.exit_code == 0 and (writable / "new").read_text() == "y\n"


async def test_bubblewrap_remount_makes_a_path_writable_for_the_next_command(
    bwrap: str, workspace: Path, tmp_path: Path
) -> None:
    context = tmp_path / "context"
    context.mkdir()
    sandbox = confined(workspace, mounts=(Mount(path=context, writable=False),))
    before = await sandbox.run_shell(f"touch {context}/a", cwd=workspace, timeout=10)
    await sandbox.remount((Mount(path=context, writable=True),))
    after = await sandbox.run_shell(f"touch {context}/a", cwd=workspace, timeout=10)
    assert (before.exit_code != 0, after.exit_code) == (True, 0)


async def test_bubblewrap_gives_no_network(bwrap: str, workspace: Path) -> None:
    outcome = await confined(workspace).run_shell(
        "tail -n +3 /proc/net/dev | cut -d: -f1", cwd=workspace, timeout=10
    )
    assert outcome.output.split() == ["lo"]


async def test_bubblewrap_gives_a_private_tmp(bwrap: str, workspace: Path) -> None:
    name = f"conclave-private-{secrets.token_hex(4)}"
    outcome = await confined(workspace).run_shell(f"touch /tmp/{name}", cwd=workspace, timeout=10)
    assert outcome.exit_code == 0
    assert not (Path("/tmp") / name).exists()


async def test_bubblewrap_timeout_kills_even_what_left_the_process_group(
    bwrap: str, workspace: Path
) -> None:
    seconds = duration()
    outcome = await confined(workspace).run_shell(
        f"setsid sleep {seconds} & sleep {seconds}", cwd=workspace, timeout=0.5
    )
    assert outcome.timed_out
    assert killed(seconds)


async def test_bubblewrap_keeps_a_read_only_path_inside_a_writable_mount_read_only(
    bwrap: str, workspace: Path, tmp_path: Path
) -> None:
    context = tmp_path / "context"
    protected = context / "protected"
    protected.mkdir(parents=True)
    # Child first: bubblewrap applies mounts in order, so the sandbox must sort them.
    sandbox = confined(
        workspace,
        mounts=(Mount(path=protected, writable=False), Mount(path=context, writable=True)),
    )
    outside = await sandbox.run_shell(f"touch {context}/new", cwd=workspace, timeout=10)
    inside = await sandbox.run_shell(f"touch {protected}/new", cwd=workspace, timeout=10)
    assert outside.exit_code == 0
    assert "Read-only file system" in inside.output


_OWNER = """
import sys, trio
from pathlib import Path
from conclave.actors.sandbox.local import LocalSandbox
from conclave.config.schema.sandbox import SandboxConfig

async def owner() -> None:
    workspace = Path(sys.argv[1])
    sandbox = LocalSandbox(workspace=workspace, mounts=(), config=SandboxConfig())
    print("ready", flush=True)
    await sandbox.run_shell(sys.argv[2], cwd=workspace, timeout=60)

trio.run(owner)
"""


def test_bubblewrap_commands_die_with_a_sigkilled_owner(bwrap: str, workspace: Path) -> None:
    seconds = duration()
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER, str(workspace), f"sleep {seconds}"],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert owner.stdout is not None
    try:
        assert owner.stdout.readline() == b"ready\n"
        assert until(lambda: bool(sleeping(seconds)))
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        owner.stdout.close()
    assert until(lambda: not sleeping(seconds))


def test_bubblewrap_commands_outlive_the_thread_that_would_have_started_them(
    bwrap: str, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--die-with-parent follows the thread that forked bubblewrap; trio's worker threads
    exit after 10 s idle, so a command started from one died at 10 s. Here they exit after
    0.2 s (trio's own setting, private), and the command outlives that by far."""
    monkeypatch.setattr(trio._core._thread_cache, "IDLE_TIMEOUT", 0.2)
    outcome = trio.run(
        lambda: confined(workspace).run_shell("sleep 1.5; echo done", cwd=workspace, timeout=30)
    )
    assert (outcome.exit_code, outcome.output) == (0, "done\n")


# --- open_sandbox -------------------------------------------------------------------------


async def test_the_command_shell_sets_the_limits_itself(bwrap: str, workspace: Path) -> None:
    sandbox = LocalSandbox(
        workspace=workspace, mounts=(), config=SandboxConfig(cpu_seconds=33, memory_mb=50)
    )
    outcome = await sandbox.run_shell("ulimit -H -t; ulimit -H -d", cwd=workspace, timeout=30)
    assert outcome.output == "33\n51200\n"
    assert sandbox.argv("true")[-3:-1] == ["sh", "-c"]


async def test_a_limit_that_cannot_be_set_stops_the_command(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "nproc_flag", lambda: "-Z")  # no shell has it
    monkeypatch.setattr(local, "own_user_namespace", lambda confined: True)
    outcome = await plain(workspace).run_shell("echo ran", cwd=workspace, timeout=30)
    assert outcome.exit_code == 126
    assert "ran" not in outcome.output


def test_the_process_limit_flag_is_the_one_this_shell_has() -> None:
    flag = limits.nproc_flag()
    assert flag in ("-u", "-p")
    done = subprocess.run(
        ["sh", "-c", f"ulimit {flag} 55 && exec cat /proc/self/limits"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert [line.split()[2:4] for line in done.stdout.splitlines() if "processes" in line] == [
        ["55", "55"]
    ]


async def test_the_default_sandbox_is_local(workspace: Path) -> None:
    async with open_sandbox(
        SandboxConfig(), run_id="r", agent="a", workspace=workspace, mounts=()
    ) as sandbox:
        assert isinstance(sandbox, LocalSandbox)
        outcome = await sandbox.run_shell("echo ok", cwd=workspace, timeout=10)
    assert outcome.output == "ok\n"
