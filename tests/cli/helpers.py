"""Running ``conclave`` for the CLI specs: in-process through ``ui.cli.main`` where that is
enough, as a real subprocess of the installed console script where stdin, signals or the
process exit matter. Configs are temp YAML files with zero latency, so runs take
milliseconds."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import trio
import yaml

CONCLAVE = Path(sys.executable).with_name("conclave")
TASK = "Name three uses of a paperclip"
REQUIRED_KEYS = {
    "final_answer",
    "winner",
    "presenter",
    "strategy",
    "answers",
    "votes",
    "rounds",
    "llm_calls",
    "restarts",
    "termination",
    "failed_agents",
    "log_dir",
    "duration_s",
}


def write_config(path: Path, agents: list[dict[str, Any]], **orchestrator: Any) -> Path:
    """A YAML config; agents are ``{"id": ..., **backend fields}``."""
    data: dict[str, Any] = {
        "agents": [
            {"id": a["id"], "backend": {k: v for k, v in a.items() if k != "id"}} for a in agents
        ],
        "orchestrator": {"quiet_period": None, **orchestrator},
    }
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def fast_agents(n: int = 3) -> list[dict[str, Any]]:
    return [{"id": f"agent-{i}", "seed": i, "latency": 0} for i in range(1, n + 1)]


def conclave(
    *args: str, cwd: Path, stdin: str | None = None, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    """Run the installed ``conclave`` command to its end."""
    return subprocess.run(
        [str(CONCLAVE), *args],
        cwd=cwd,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def parse_json(stdout: str) -> dict[str, Any]:
    data = json.loads(stdout)
    assert isinstance(data, dict)
    return data


def start(*args: str, cwd: Path, stdin: int | None = subprocess.DEVNULL) -> subprocess.Popen[str]:
    """Start the installed ``conclave`` command; its output is read by the test."""
    return subprocess.Popen(
        [str(CONCLAVE), *args],
        cwd=cwd,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def read_stderr_until(process: subprocess.Popen[str], text: str, timeout: float = 60) -> list[str]:
    """The lines of the process's stderr up to and including the first holding ``text``.
    If none comes within ``timeout`` seconds the process is killed (ending the read) and
    the test fails with what it did print."""
    assert process.stderr is not None
    watchdog = threading.Timer(timeout, process.kill)
    watchdog.start()
    lines = []
    try:
        for line in process.stderr:
            lines.append(line)
            if text in line:
                return lines
    finally:
        watchdog.cancel()
    raise AssertionError(f"stderr ended without {text!r}:\n{''.join(lines)}")


def wait_until_reading_stdin(process: subprocess.Popen[str], timeout: float = 30) -> None:
    """Wait until the process blocks in ``read`` on fd 0, as /proc records it: the command
    has started and waits for its task on stdin."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        fields = Path(f"/proc/{process.pid}/syscall").read_text().split()
        if fields[:2] == [_READ_SYSCALL, "0x0"]:
            return
        time.sleep(0.01)
    raise AssertionError("the command never started reading stdin")


_READ_SYSCALL = "63" if platform.machine() in ("aarch64", "arm64") else "0"


def finish(process: subprocess.Popen[str], timeout: float = 30) -> tuple[str, str]:
    """The rest of stdout and stderr once the process has exited; killed if it hangs."""
    try:
        return process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


async def conclave_process(
    *args: str, cwd: Path, limit: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """The installed ``conclave`` as a subprocess from a trio spec: no stdin, both outputs
    captured, failing the spec after ``limit`` seconds; ``env`` replaces the environment."""
    with trio.fail_after(limit):
        return await trio.run_process(
            [str(CONCLAVE), *args],
            cwd=cwd,
            stdin=b"",
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env=env,
        )


def close_stdout() -> None:
    """A ``preexec_fn``: the command starts with its stdout closed, as after ``>&-``."""
    os.close(1)


def with_reader_gone(*argv: str, cwd: Path, timeout: float = 60) -> tuple[int, str]:
    """Run ``conclave *argv`` whose stdout reader goes away before anything is written
    (``conclave ... | head`` ending early): its exit code and its stderr."""
    process = subprocess.Popen(
        [str(CONCLAVE), *argv],
        cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert process.stdout is not None
    process.stdout.close()
    err = process.communicate(timeout=timeout)[1]
    return process.returncode, err
