"""``conclave batch --engine ray --address`` against a real ``ray start --head`` with token
authentication on (``RAY_AUTH_MODE=token``): without the token the batch is refused with
what to set (exit 2), with it the batch runs. The head runs with a home of its own (where
Ray writes the token) and is stopped after the module by killing its processes by pid
(``ray stop`` would stop every Ray cluster on the machine, other specs' too)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from conclave.actors.batch.ray_engine import LOOPBACK_ONLY_ENV
from tests.batch.helpers import results, tasks, write_tasks
from tests.cli.helpers import CONCLAVE

# Every Ray spec runs on the same xdist worker, one at a time: they count the machine's Ray
# processes, and a cluster another spec started meanwhile would look left behind.
pytestmark = pytest.mark.xdist_group("ray")

RAY = Path(sys.executable).with_name("ray")


@attrs.frozen(kw_only=True)
class Head:
    address: str
    token: str


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _processes_of(port: int) -> set[int]:
    """The live processes of the cluster whose GCS listens on ``port``: those naming it
    (its GCS, raylet and monitors) and their descendants (agents and workers)."""
    parents = {}
    named = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        state, parent = stat[stat.rindex(")") + 2 :].split()[:2]
        if state == "Z":
            continue
        parents[int(entry.name)] = int(parent)
        if f":{port} " in f"{cmdline} " or f"port={port} " in f"{cmdline} ":
            named.add(int(entry.name))
    found = set(named)
    while more := {pid for pid, parent in parents.items() if parent in found} - found:
        found |= more
    return found


def _stop(port: int, grace: float = 3, timeout: float = 30) -> None:
    """End the cluster's processes (SIGTERM, SIGKILL after ``grace`` seconds) and wait
    until they are gone."""
    started = time.monotonic()
    while left := _processes_of(port):
        waited = time.monotonic() - started
        assert waited < timeout, f"Ray processes left behind: {sorted(left)}"
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL if waited > grace else signal.SIGTERM)
        time.sleep(0.5)


def _forget(address: str) -> None:
    """Remove Ray's note of the machine's current cluster if it is this one, as `ray stop`
    does: a stopped cluster's note would send later ``ray.init()`` calls to it."""
    note = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
    with contextlib.suppress(FileNotFoundError):
        if note.read_text(encoding="utf-8").strip() == address:
            note.unlink()


@pytest.fixture(scope="module")
def head(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Head]:
    """``ray start --head`` with token authentication, 1 CPU, loopback only."""
    home = tmp_path_factory.mktemp("head-home")
    port = _free_port()
    env = {**os.environ, "HOME": str(home), "RAY_AUTH_MODE": "token", LOOPBACK_ONLY_ENV: "0"}
    subprocess.run(  # the token, in ~/.ray/auth_token
        [str(RAY), "get-auth-token", "--generate"],
        env=env, check=True, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    try:
        subprocess.run(
            [str(RAY), "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}",
             "--num-cpus=1",
             "--include-dashboard=false", "--disable-usage-stats",
             f"--object-store-memory={100 * 2**20}"],
            env=env, check=True, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        token = (home / ".ray" / "auth_token").read_text(encoding="utf-8").strip()
        yield Head(address=f"127.0.0.1:{port}", token=token)
    finally:
        _stop(port)
        _forget(f"127.0.0.1:{port}")


def _batch(
    tmp_path: Path, config: Path, address: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """``conclave batch`` from a home without a Ray token, with only ``env`` for Ray (and
    loopback only: Ray would otherwise turn 127.0.0.1 into the machine's network address,
    where the head does not listen)."""
    home = tmp_path / "client-home"
    home.mkdir(exist_ok=True)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    environ[LOOPBACK_ONLY_ENV] = "0"
    return subprocess.run(
        [str(CONCLAVE), "batch", "tasks.jsonl", "--out", "out.jsonl", "--config", str(config),
         "--engine", "ray", "--address", address],
        cwd=tmp_path, env={**environ, "HOME": str(home), **env}, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip


def test_without_the_token_a_token_cluster_refuses_the_batch_which_says_what_to_set(
    head: Head, tmp_path: Path, fast_config: Path
) -> None:
    write_tasks(tmp_path / "tasks.jsonl", tasks(2))

    ran = _batch(tmp_path, fast_config, head.address)

    assert ran.returncode == 2, ran.stderr
    assert f"--address {head.address}: Ray could not start" in ran.stderr
    assert "set RAY_AUTH_MODE=token and give the cluster's token" in ran.stderr
    assert "Traceback" not in ran.stderr
    assert results(tmp_path / "out.jsonl") == []


def test_with_the_token_the_batch_runs_on_the_token_cluster(
    head: Head, tmp_path: Path, fast_config: Path
) -> None:
    write_tasks(tmp_path / "tasks.jsonl", tasks(3))

    ran = _batch(
        tmp_path, fast_config, head.address, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=head.token
    )

    assert ran.returncode == 0, ran.stderr
    assert f"connected to the Ray cluster at {head.address} (1 node, 1 CPUs)" in ran.stderr
    assert sorted(r["id"] for r in results(tmp_path / "out.jsonl")) == ["t0", "t1", "t2"]
