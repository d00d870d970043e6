"""``conclave batch --engine ray`` without a cluster of the specs' own: what it says when Ray
is missing or unreachable, that ``conclave`` never imports Ray on its own, and the real
command starting (and removing) a local cluster of its own, to the end or to a Ctrl+C."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conclave.actors.batch.ray_engine import cpus_per_host, host_slots
from tests.batch.helpers import batch, results, tasks, write_tasks
from tests.batch_ray.helpers import ray_processes, wait_for_lines, wait_until_gone
from tests.cli.helpers import CONCLAVE, conclave, finish

# Every Ray spec runs on the same xdist worker, one at a time: they count the machine's Ray
# processes, and a cluster another spec started meanwhile would look left behind.
pytestmark = pytest.mark.xdist_group("ray")

Capsys = pytest.CaptureFixture[str]


def test_without_ray_installed_engine_ray_says_how_to_install_it_and_exits_2(
    tmp_path: Path, fast_config: Path, capsys: Capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` finds without Ray
    write_tasks(tmp_path / "tasks.jsonl", tasks(3))

    ran = batch(capsys, "tasks.jsonl", "--out", "out.jsonl", "--config", fast_config,
                "--engine", "ray")  # fmt: skip

    assert ran.code == 2
    assert "--engine ray needs Ray, which is not installed" in ran.err
    assert "pip install -e '.[ray]' in Conclave's source tree" in ran.err
    assert "Traceback" not in ran.err
    assert not (tmp_path / "out.jsonl").exists()


def test_conclave_never_imports_ray_on_its_own() -> None:
    code = (
        "import sys, conclave.ui.cli, conclave.ui.batch.command, "
        "conclave.actors.batch.ray_engine; print('ray' in sys.modules)"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout

    assert shown.strip() == "False"


def test_an_address_where_nothing_listens_is_refused_at_once_with_exit_2(
    tmp_path: Path, fast_config: Path
) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    write_tasks(tmp_path / "tasks.jsonl", tasks(3))
    started = time.monotonic()

    ran = conclave("batch", "tasks.jsonl", "--out", "out.jsonl", "--config", str(fast_config),
                   "--engine", "ray", "--address", f"127.0.0.1:{port}", cwd=tmp_path)  # fmt: skip

    assert ran.returncode == 2, ran.stderr
    assert f"--address 127.0.0.1:{port}: nothing answers there" in ran.stderr
    assert "ray start --head" in ran.stderr
    assert "Traceback" not in ran.stderr
    assert time.monotonic() - started < 20
    assert results(tmp_path / "out.jsonl") == []


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--address", "127.0.0.1:6379"), "--address is the Ray cluster's; add --engine ray"),
        (("--engine", "ray", "--workers", "2"), "--workers is for --engine local"),
        (("--engine", "spark"), "invalid choice: 'spark'"),
    ],
)
def test_engine_flags_that_do_not_go_together_exit_2(
    tmp_path: Path, fast_config: Path, capsys: Capsys, flags: tuple[str, ...], message: str
) -> None:
    write_tasks(tmp_path / "tasks.jsonl", tasks(1))

    ran = batch(capsys, "tasks.jsonl", "--out", "out.jsonl", "--config", fast_config, *flags)

    assert ran.code == 2
    assert message in ran.err


def test_the_runs_at_a_time_are_split_over_one_host_per_cpu() -> None:
    assert host_slots(2, 50) == [25, 25]
    assert host_slots(3.5, 10) == [4, 3, 3]  # whole CPUs only
    assert host_slots(64, 4) == [1, 1, 1, 1]  # never a host without a run
    assert host_slots(0.5, 8) == [8]  # at least one host
    assert host_slots(0, 8) == [8]  # a cluster that scales up on demand


def test_each_host_asks_for_its_share_of_the_clusters_cpus() -> None:
    assert cpus_per_host(2, 2) == 1.0
    assert cpus_per_host(3.5, 3) == 1.1666  # rounded down: three still fit
    assert cpus_per_host(1, 100_000) == 0.0001  # Ray's smallest share
    assert cpus_per_host(0, 8) == 1.0  # a cluster that scales up on demand


def test_the_real_command_starts_a_local_cluster_runs_the_batch_and_leaves_no_ray_process(
    tmp_path: Path, fast_config: Path
) -> None:
    before = ray_processes()
    write_tasks(tmp_path / "tasks.jsonl", tasks(10))

    ran = conclave("batch", "tasks.jsonl", "--out", "out.jsonl", "--config", str(fast_config),
                   "--engine", "ray", "--concurrency", "2", cwd=tmp_path, timeout=180)  # fmt: skip

    assert ran.returncode == 0, ran.stderr
    assert "started a local Ray cluster (1 node, " in ran.stderr
    assert "Ray: 10 runs in " in ran.stderr
    written = results(tmp_path / "out.jsonl")
    assert sorted(r["id"] for r in written) == sorted(f"t{i}" for i in range(10))
    assert {r["node"] for r in written} == {socket.gethostname()}
    assert {r["termination"] for r in written} == {"completed"}
    wait_until_gone(before)


def test_a_note_of_a_stopped_cluster_does_not_keep_the_batch_from_starting_its_own(
    tmp_path: Path, fast_config: Path
) -> None:
    """``ray start`` notes the machine's current cluster in Ray's temporary directory, and
    ``ray.init()`` without an address connects to it: a cluster stopped without ``ray stop``
    (killed) leaves the note behind."""
    before = ray_processes()
    note = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
    kept = note.read_bytes() if note.exists() else None
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        note.parent.mkdir(exist_ok=True)
        note.write_text(f"127.0.0.1:{unused.getsockname()[1]}")  # nothing listens there
    write_tasks(tmp_path / "tasks.jsonl", tasks(2))
    try:
        ran = conclave("batch", "tasks.jsonl", "--out", "out.jsonl", "--config",
                       str(fast_config), "--engine", "ray", cwd=tmp_path, timeout=180)  # fmt: skip
    finally:
        if kept is None:
            note.unlink()
        else:
            note.write_bytes(kept)

    assert ran.returncode == 0, ran.stderr
    assert "started a local Ray cluster (1 node, " in ran.stderr
    assert len(results(tmp_path / "out.jsonl")) == 2
    wait_until_gone(before)


def test_ctrl_c_in_a_terminal_stops_a_ray_batch_with_130_and_its_cluster_goes_with_it(
    tmp_path: Path, slow_config: Path
) -> None:
    """Ctrl+C reaches the terminal's whole process group: the batch and the cluster it
    started (Ray's own processes block SIGINT and are shut down by the batch)."""
    before = ray_processes()
    write_tasks(tmp_path / "tasks.jsonl", tasks(300))
    process = subprocess.Popen(
        [str(CONCLAVE), "batch", "tasks.jsonl", "--out", "out.jsonl", "--config",
         str(slow_config), "--engine", "ray", "--concurrency", "2"],
        cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True,
    )  # fmt: skip
    wait_for_lines(tmp_path / "out.jsonl", 3)

    os.killpg(process.pid, signal.SIGINT)
    _, err = finish(process, timeout=60)

    assert process.returncode == 130, err
    assert "Traceback" not in err
    written = results(tmp_path / "out.jsonl")  # every line whole
    assert 3 <= len(written) < 300
    assert {r["termination"] for r in written} == {"completed"}
    wait_until_gone(before)
