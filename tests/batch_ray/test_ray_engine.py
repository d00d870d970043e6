"""The Ray engine on a real local Ray cluster, started once for this module (2 CPUs, a
100 MB object store, no dashboard, listening on loopback): jobs on Ray actors, stopping and
halting, a worker that dies; ``conclave batch --engine ray`` in this process (on the
module's session) and as its own process (``--address``), to the end, resumed, and stopped
by Ctrl+C or SIGTERM."""

from __future__ import annotations

import itertools
import logging
import os
import signal
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import pytest
import ray
import trio

from conclave.actors.batch.ray_engine import RayEngine
from conclave.actors.batch.ray_host import run_remote
from conclave.actors.batch.version import installed_version
from conclave.actors.batch.work import BatchJob, BatchWork, JobOutcome
from conclave.config.schema import (
    AgentConfig,
    ConclaveConfig,
    OrchestratorConfig,
    ScriptedBackendConfig,
)
from conclave.config.schema.openai import OpenAIBackendConfig
from conclave.config.secret import Secret
from conclave.ui.cli import main
from tests.batch.helpers import batch, results, tasks, write_tasks
from tests.batch_ray.helpers import wait_for_lines
from tests.cli.helpers import conclave, finish, start

# Every Ray spec runs on the same xdist worker, one at a time: they count the machine's Ray
# processes, and a cluster another spec started meanwhile would look left behind.
pytestmark = pytest.mark.xdist_group("ray")

Capsys = pytest.CaptureFixture[str]
CPUS = 2


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A local Ray cluster for the module; its address (``HOST:PORT``)."""
    sigterm = signal.getsignal(signal.SIGTERM)
    ray.init(
        address="local",  # never a cluster `ray start` left on the machine
        num_cpus=CPUS,
        object_store_memory=100 * 2**20,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.ERROR,
    )
    signal.signal(signal.SIGTERM, sigterm)  # ray.init takes it over
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()


def _jobs(n: int, latency: float) -> BatchWork:
    agent = AgentConfig(id="a", backend=ScriptedBackendConfig(seed=1, latency=latency))
    config = ConclaveConfig(agents=(agent,))
    return BatchWork(
        jobs=tuple(BatchJob(key=f"j{i}", task=f"t{i}", config=config) for i in range(n))
    )


def _free_cpus() -> float:
    resources = ray.available_resources()  # type: ignore[no-untyped-call]
    return float(resources.get("CPU", 0.0))


async def _until(condition: Callable[[], bool], timeout: float = 60) -> None:
    """Poll ``condition`` (Ray's state has nothing to wait on) until it holds."""
    with trio.fail_after(timeout):
        while True:
            if condition():
                return
            await trio.sleep(0.05)


def _wait_for_free_cpus(timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while _free_cpus() < CPUS and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _free_cpus() == CPUS, "the batch's Ray hosts still hold the cluster's CPUs"


async def test_every_job_runs_once_in_a_ray_worker_and_its_outcome_names_the_host(
    cluster: str,
) -> None:
    engine = RayEngine(concurrency=4)
    reported: list[JobOutcome] = []

    await engine.run(_jobs(12, latency=0), reported.append)

    assert sorted(o.index for o in reported) == list(range(12))
    assert {o.result["termination"] for o in reported} == {"completed"}
    assert {o.node for o in reported} == {socket.gethostname()}
    assert engine.workers
    assert os.getpid() not in {pid for _, pid in engine.workers}  # not in this process
    assert engine.lost == []


async def test_each_ray_worker_process_runs_several_runs_at_once(cluster: str) -> None:
    engine = RayEngine(concurrency=6)  # over 2 CPUs: two hosts of three runs at a time
    reported: list[JobOutcome] = []

    await engine.run(_jobs(12, latency=0.3), reported.append)

    assert len(reported) == 12
    assert len(engine.workers) == CPUS
    for _, pid in engine.workers:
        spans = sorted(
            (o.started, o.started + o.result["duration_s"]) for o in reported if o.pid == pid
        )
        overlapping = sum(1 for a, b in itertools.pairwise(spans) if b[0] < a[1])
        assert overlapping >= 1, f"the runs of process {pid} ran one after another"


async def test_stop_starting_lets_the_ray_tasks_in_flight_finish_and_be_reported(
    cluster: str,
) -> None:
    engine = RayEngine(concurrency=2)
    reported: list[JobOutcome] = []
    two = trio.Event()

    def report(outcome: JobOutcome) -> None:
        reported.append(outcome)
        if len(reported) == 2:
            two.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(engine.run, _jobs(10, latency=0.3), report)
        await two.wait()  # the next two are in flight
        engine.stop_starting()

    assert len(reported) == 4


async def test_halting_returns_at_once_kills_the_hosts_and_reports_none_of_their_runs(
    cluster: str,
) -> None:
    engine = RayEngine(concurrency=CPUS)  # a whole CPU per host: both up is none free
    reported: list[JobOutcome] = []

    async with trio.open_nursery() as nursery:
        nursery.start_soon(engine.run, _jobs(10, latency=5.0), reported.append)
        await _until(lambda: _free_cpus() == 0)
        await trio.sleep(1)  # the hosts are running their first runs
        halted = trio.current_time()
        engine.halt()

    assert trio.current_time() - halted < 1
    # Killed, in a session the engine did not open too: the CPUs are free before any run
    # (5 s of calls) could have ended.
    await _until(lambda: _free_cpus() == CPUS, timeout=3)
    assert reported == []


async def test_a_ray_worker_that_dies_loses_its_run_and_ray_starts_it_again_for_the_rest(
    cluster: str,
) -> None:
    await _until(lambda: _free_cpus() == CPUS)
    engine = RayEngine(concurrency=2)  # two hosts, one run at a time each
    reported: list[JobOutcome] = []

    async with trio.open_nursery() as nursery:
        nursery.start_soon(engine.run, _jobs(6, latency=1.0), reported.append)
        await _until(lambda: bool(reported))
        await trio.sleep(0.3)  # the host that reported is running its next run
        os.kill(reported[0].pid, signal.SIGKILL)

    assert len(reported) == 5
    assert len(engine.lost) == 1, engine.lost
    [lost] = engine.lost
    assert lost.startswith("the Ray worker running j")
    assert len({o.pid for o in reported}) == 3  # the killed host came back as a new process


def test_a_ray_batch_appends_one_result_per_task_naming_the_node_that_ran_it(
    cluster: str, tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    write_tasks(tmp_path / "tasks.jsonl", tasks(12))

    ran = batch(capsys, "tasks.jsonl", "--out", "out.jsonl", "--config", fast_config,
                "--engine", "ray", "--concurrency", "4")  # fmt: skip

    assert ran.code == 0, ran.err
    assert "connected to the Ray cluster at the current session (1 node, 2 CPUs)" in ran.err
    assert "Ray: 12 runs in " in ran.err
    written = results(tmp_path / "out.jsonl")
    assert sorted(r["id"] for r in written) == sorted(f"t{i}" for i in range(12))
    assert {r["node"] for r in written} == {socket.gethostname()}
    assert {r["mode"] for r in written} == {"multi"}
    assert {r["termination"] for r in written} == {"completed"}
    assert ran.out.splitlines()[1].split()[:3] == ["multi", "12", "12"]


def test_a_ray_batch_resumes_running_only_the_tasks_not_in_results(
    cluster: str, tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    write_tasks(tmp_path / "first.jsonl", tasks(5))
    write_tasks(tmp_path / "tasks.jsonl", tasks(10))
    flags = ("--out", "out.jsonl", "--config", fast_config)
    assert batch(capsys, "first.jsonl", *flags).code == 0  # t0..t4 on this machine

    resumed = batch(capsys, "tasks.jsonl", *flags, "--engine", "ray")

    assert resumed.code == 0, resumed.err
    assert "5 runs already in out.jsonl; skipped" in resumed.err
    written = [r["id"] for r in results(tmp_path / "out.jsonl")]
    assert sorted(written[5:]) == [f"t{i}" for i in range(5, 10)]  # only these ran on Ray
    again = batch(capsys, "tasks.jsonl", *flags, "--engine", "ray")
    assert "10 runs already in out.jsonl; skipped" in again.err
    assert len(results(tmp_path / "out.jsonl")) == 10


def test_ctrl_c_stops_a_ray_batch_with_130_its_tasks_end_and_a_resume_completes_it(
    cluster: str, tmp_path: Path, slow_config: Path, fast_config: Path
) -> None:
    write_tasks(tmp_path / "tasks.jsonl", tasks(200))
    flags = ("batch", "tasks.jsonl", "--out", "out.jsonl",
             "--engine", "ray", "--address", cluster, "--concurrency", "2")  # fmt: skip
    process = start(*flags, "--config", str(slow_config), cwd=tmp_path)
    wait_for_lines(tmp_path / "out.jsonl", 4)

    process.send_signal(signal.SIGINT)
    _, err = finish(process, timeout=60)

    assert process.returncode == 130, err
    assert "Traceback" not in err
    interrupted = results(tmp_path / "out.jsonl")  # every line whole
    assert 4 <= len(interrupted) < 200
    assert len({r["id"] for r in interrupted}) == len(interrupted)
    assert {r["termination"] for r in interrupted} == {"completed"}
    _wait_for_free_cpus()  # the interrupted runs' tasks ended with the batch's job

    # The rest on zero-latency agents: only the interruption needs runs that take a while
    # (--force keeps the results the slow config made).
    resumed = conclave(*flags, "--config", str(fast_config), "--force", cwd=tmp_path, timeout=180)

    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(interrupted)} runs already in out.jsonl; skipped" in resumed.stderr
    final = results(tmp_path / "out.jsonl")
    assert sorted(r["id"] for r in final) == sorted(f"t{i}" for i in range(200))


def test_sigterm_stops_a_ray_batch_with_143_and_prints_the_summary(
    cluster: str, tmp_path: Path, slow_config: Path
) -> None:
    write_tasks(tmp_path / "tasks.jsonl", tasks(200))
    process = start("batch", "tasks.jsonl", "--out", "out.jsonl", "--config", str(slow_config),
                    "--engine", "ray", "--address", cluster, "--concurrency", "2",
                    cwd=tmp_path)  # fmt: skip
    wait_for_lines(tmp_path / "out.jsonl", 2)

    process.send_signal(signal.SIGTERM)
    out, err = finish(process, timeout=60)

    assert process.returncode == 143, err
    written = results(tmp_path / "out.jsonl")
    assert 2 <= len(written) < 200
    assert out.splitlines()[0].split()[0] == "mode"
    _wait_for_free_cpus()


async def test_a_worker_running_another_conclave_refuses_the_job_without_running_it() -> None:
    job = BatchJob(key="j", task="t", config=_jobs(1, latency=0).jobs[0].config)
    ran_jobs: list[BatchJob] = []

    async def run_job(
        job: BatchJob,
        index: int,
        *,
        on_outcome: Callable[[JobOutcome], None] | None = None,
        claimed_at: float | None = None,
    ) -> JobOutcome:
        ran_jobs.append(job)
        raise AssertionError("a refused job ran")

    ran = await run_remote(run_job, attrs.evolve(job, conclave_version="0.0.0-other"), 0)

    assert ran_jobs == []

    assert ran.outcome is None
    assert ran.refused == (
        f"the Ray worker on {socket.gethostname()} runs Conclave {installed_version()}, this "
        "batch 0.0.0-other; install the same version on every node (pip install -e . in "
        "Conclave's source tree at 0.0.0-other; PyPI's conclave is another project)"
    )


async def test_a_batch_whose_workers_run_another_conclave_stops_and_says_so(
    cluster: str,
) -> None:
    work = _jobs(6, latency=0)
    other = BatchWork(
        jobs=tuple(attrs.evolve(j, conclave_version="0.0.0-other") for j in work.jobs)
    )
    engine = RayEngine(concurrency=2)
    reported: list[JobOutcome] = []

    await engine.run(other, reported.append)

    assert reported == []
    assert len(engine.lost) == 1
    assert "runs Conclave" in engine.lost[0] and "the batch stopped starting runs" in engine.lost[0]


async def test_a_ray_worker_gets_the_name_of_a_keys_variable_not_the_key(
    cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Set after the cluster started, the variable is in this process only: a worker that
    # was sent its name, not the key, finds no key and says which variable to set.
    monkeypatch.setenv("CONCLAVE_TEST_TEAM_KEY", "sk-test-0123456789abcdef")
    backend = OpenAIBackendConfig(
        model="m", base_url="http://192.0.2.1:9/v1", api_key=Secret("sk-test-0123456789abcdef")
    )
    config = ConclaveConfig(
        agents=(AgentConfig(id="a", backend=backend),),
        orchestrator=OrchestratorConfig(max_tries_per_round=1),
    )
    reported: list[JobOutcome] = []

    await RayEngine(concurrency=1).run(
        BatchWork(jobs=(BatchJob(key="k", task="t", config=config),)), reported.append
    )

    (outcome,) = reported
    assert outcome.result["termination"] == "failed"
    assert "CONCLAVE_TEST_TEAM_KEY" in outcome.result["failed_agents"]["a"]


def test_a_ray_runs_logs_come_back_to_the_batchs_log_dir(
    cluster: str, tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    write_tasks(tmp_path / "tasks.jsonl", tasks(3))

    ran = batch(capsys, "tasks.jsonl", "--out", "out.jsonl", "--config", fast_config,
                "--engine", "ray", "--concurrency", "2", "--log-dir", "logs")  # fmt: skip

    assert ran.code == 0, ran.err
    written = results(tmp_path / "out.jsonl")
    for record in written:
        log_dir = tmp_path / record["log_dir"]  # as written: relative to the batch's cwd
        assert log_dir.parent == tmp_path / "logs"
        assert (log_dir / "events.jsonl").read_text().startswith('{"kind":"log_opened"')
    assert len(list((tmp_path / "logs").iterdir())) == 3
    assert main(["replay", str(tmp_path / written[0]["log_dir"] / "events.jsonl")]) == 0


def test_a_ray_batch_rerun_answers_from_the_cache_every_host_shares(
    cluster: str, tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    write_tasks(tmp_path / "tasks.jsonl", tasks(8))
    flags = ("--config", fast_config, "--engine", "ray", "--concurrency", "4",
             "--agent-mode", "single", "--refinement", "off", "--cache", "replies")  # fmt: skip
    first = batch(capsys, "tasks.jsonl", "--out", "one.jsonl", *flags)

    again = batch(capsys, "tasks.jsonl", "--out", "two.jsonl", *flags)

    assert first.code == again.code == 0, again.err
    assert "response cache replies: 0 of 8 calls answered from it" in first.out
    assert "response cache replies: 8 of 8 calls answered from it" in again.out
    assert "Ray: 8 runs in 2 worker processes" in again.err
    assert len(list((tmp_path / "replies").rglob("*.json"))) == 8  # under the batch's cwd
    before = {r["id"]: r["final_answer"] for r in results(tmp_path / "one.jsonl")}
    assert {r["id"]: r["final_answer"] for r in results(tmp_path / "two.jsonl")} == before
