"""``conclave serve`` as a real process: what it prints, how a client uses it end to end,
how it refuses bad flags, and how it stops on signals."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio
from trio_websocket import open_websocket_url

from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import CONCLAVE, finish, write_config
from tests.serve.helpers import BIG, TASK


def serve(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    config = write_config(
        tmp_path / "agents.yaml",
        [{"id": f"agent-{i}", "seed": i, "latency": 0.05} for i in (1, 2, 3)],
    )
    return subprocess.Popen(
        [str(CONCLAVE), "serve", "--port", "0", "--config", str(config), *args],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def announced(process: subprocess.Popen[str]) -> dict[str, str]:
    """The url, token and health lines the server prints on stdout as it starts."""
    assert process.stdout is not None
    found: dict[str, str] = {}
    for line in process.stdout:
        match = re.fullmatch(r"conclave serve: (listening on|token:|health:) (.+)\n", line)
        assert match, line
        found[match.group(1).rstrip(":")] = match.group(2)
        if "health" in found:
            return found
    raise AssertionError("the server ended before saying where it listens")


async def start_watch_override(url: str, token: str) -> list[dict[str, Any]]:
    """What the README's example client does: start a run, watch it, override the vote's
    winner, and read until the result."""
    lines: list[dict[str, Any]] = []
    headers = [(b"authorization", f"Bearer {token}".encode())]
    async with open_websocket_url(url, extra_headers=headers, max_message_size=BIG) as ws:
        await ws.send_message(
            json.dumps({"type": "start_run", "task": TASK, "override_window": True})
        )
        while not lines or lines[-1]["type"] != "result":
            frame = await ws.get_message()
            for line in str(frame).split("\n"):
                message = json.loads(line)
                lines.append(message)
                if message["type"] == "override_window":
                    other = sorted(set(message["answers"]) - {message["winner"]})[0]
                    await ws.send_message(
                        json.dumps(
                            {"type": "override", "run_id": message["run_id"], "agent": other}
                        )
                    )
    return lines


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGINT, ExitCode.CANCELLED), (signal.SIGTERM, ExitCode.TERMINATED)]
)
def test_a_client_starts_watches_overrides_and_gets_the_result_then_a_signal_stops_it(
    tmp_path: Path, signum: int, code: int
) -> None:
    process = serve(tmp_path)
    try:
        where = announced(process)
        lines = trio.run(start_watch_override, where["listening on"], where["token"])
        process.send_signal(signum)
        _, err = finish(process)
    finally:
        if process.poll() is None:
            process.kill()

    types = [line["type"] for line in lines]
    assert types[:3] == ["welcome", "run_accepted", "run_started"]
    assert "override_window" in types and "verdict" in types
    verdict = next(line for line in lines if line["type"] == "verdict")
    result = lines[-1]
    assert verdict["accepted"] is True
    assert result["decided_by"] == "override"
    assert result["presenter"] == verdict["agent"]
    assert process.returncode == code
    assert "Traceback" not in err
    assert f"run {result['run_id']} ended: completed" in err


def test_a_signal_cancels_the_runs_in_progress_and_their_logs_end(tmp_path: Path) -> None:
    process = serve(tmp_path)
    try:
        where = announced(process)

        async def start() -> str:
            headers = [(b"authorization", f"Bearer {where['token']}".encode())]
            async with open_websocket_url(where["listening on"], extra_headers=headers) as ws:
                await ws.get_message()
                task = {"type": "start_run", "task": TASK, "override_window": True}
                await ws.send_message(json.dumps(task))
                while True:
                    for line in str(await ws.get_message()).split("\n"):
                        if json.loads(line)["type"] == "override_window":
                            return str(json.loads(line)["run_id"])

        run_id = trio.run(start)  # the run waits for a decision; nobody watches it now
        process.send_signal(signal.SIGINT)
        _, err = finish(process)
    finally:
        if process.poll() is None:
            process.kill()

    log = (tmp_path / ".conclave" / "runs" / run_id / "events.jsonl").read_text().splitlines()
    assert json.loads(log[-1])["kind"] == "run_ended"
    assert json.loads(log[-1])["termination"] == "cancelled"
    assert process.returncode == ExitCode.CANCELLED
    assert f"run {run_id} ended: cancelled" in err


def test_a_token_file_is_used_and_not_printed(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("file-token-0123456789abcdef\n")
    process = serve(tmp_path, "--token-file", str(token_file))
    try:
        where = announced(process)

        async def welcome() -> str:
            headers = [(b"authorization", b"Bearer file-token-0123456789abcdef")]
            async with open_websocket_url(where["listening on"], extra_headers=headers) as ws:
                return str(json.loads(await ws.get_message())["type"])

        kind = trio.run(welcome)
        process.send_signal(signal.SIGTERM)
        finish(process)
    finally:
        if process.poll() is None:
            process.kill()

    assert where["token"] == f"the one in {token_file}"
    assert kind == "welcome"


def test_a_non_local_host_without_a_token_file_is_refused(tmp_path: Path) -> None:
    process = serve(tmp_path, "--host", "0.0.0.0")
    out, err = finish(process)

    assert process.returncode == ExitCode.USAGE
    assert out == ""
    assert "--host 0.0.0.0 is not a loopback address" in err
    assert "--token-file" in err


def test_a_port_in_use_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        process = serve(tmp_path, "--port", str(port))
        _, err = finish(process)

    assert process.returncode == ExitCode.USAGE
    assert f"cannot listen on 127.0.0.1 port {port}" in err
    assert "Traceback" not in err


def test_an_unreadable_token_file_is_a_usage_error(tmp_path: Path) -> None:
    process = serve(tmp_path, "--token-file", str(tmp_path / "absent"))
    _, err = finish(process)

    assert process.returncode == ExitCode.USAGE
    assert "--token-file" in err and "cannot read it" in err


def test_a_log_dir_whose_name_is_too_long_is_a_usage_error_before_it_listens(
    tmp_path: Path,
) -> None:
    process = serve(tmp_path, "--log-dir", "a" * 300)
    out, err = finish(process)

    assert process.returncode == ExitCode.USAGE
    assert out == ""  # nothing listened
    assert err == (
        f"conclave serve: --log-dir {'a' * 300}: cannot use it (File name too long); "
        "pass a writable directory\n"
    )


def test_a_log_dir_that_cannot_be_written_in_is_a_usage_error_before_it_listens(
    tmp_path: Path,
) -> None:
    process = serve(tmp_path, "--log-dir", "/proc")
    out, err = finish(process)

    assert process.returncode == ExitCode.USAGE
    assert out == ""
    assert err.startswith("conclave serve: --log-dir /proc: cannot write in it (")
