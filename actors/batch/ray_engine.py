"""The Ray engine: a batch's runs on a Ray cluster (``conclave batch --engine ray``).

Ray schedules a small pool of :class:`~actors.batch.ray_host.RunHost` actors, one per CPU
of the cluster (at most one per run at a time), each an async actor running several runs at
once in one worker process (the same :class:`~actors.batch.work.BatchWork` code the other
engines run, in a trio loop of the host's own); ``--concurrency`` runs are split over them
as over ``--workers`` processes. The batch's process keeps every host's share in flight
(a lane per run at a time, claiming from one counter) and reports each outcome as it
comes: it stays the only writer of RESULTS. One Ray worker process per run at a time (the
engine before the hosts) spent ~29 s of a 100-run batch starting and stopping 16 processes
and reached 0.49 of the ideal rate (:mod:`benchmarks.batch_ray_bench`).

Ray is an optional dependency: nothing here imports it until :meth:`RayEngine.run` (or
:func:`require_ray`) is called, so ``conclave`` starts as fast without it.

A host whose process dies loses its runs in flight (reported in :attr:`RayEngine.lost`);
Ray starts it again (up to :data:`HOST_RESTARTS` times) and its lanes go on once it
answers; a host gone for good takes its lanes with it.

Stopping: :meth:`RayEngine.stop_starting` closes the claims (the runs in flight finish and
are reported); :meth:`RayEngine.halt` stops waiting for the runs in flight and reports none
of them. Calls are not cancelled one by one: ``ray.cancel`` of a call whose reply is on its
way races in Ray's own bookkeeping and can abort the calling process (``Check failed: ...
Tried to complete task that was not pending``). The engine kills its hosts instead (with
``ray.kill``) as ``run`` returns, and their runs end with their processes; a session it
started ends with it too.
"""

from __future__ import annotations

import collections
import importlib
import logging
import math
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from types import ModuleType
from typing import Any

import attrs
import trio

from conclave.actors.batch.claims import Counter
from conclave.actors.batch.engine import split_slots
from conclave.actors.batch.ray_host import RunHost, TaskOutcome
from conclave.actors.batch.ray_keys import job_by_key_names
from conclave.actors.batch.ray_logs import bring_back
from conclave.actors.batch.work import BatchWork, Report

__all__ = [
    "HOST_RESTARTS",
    "HOST_RESTART_WAIT_S",
    "HOST_RETRY_EVERY_S",
    "INSTALL_HINT",
    "LOCAL_OBJECT_STORE_BYTES",
    "LOOPBACK_ONLY_ENV",
    "PROBE_TIMEOUT_S",
    "Cluster",
    "RayEngine",
    "RayMissing",
    "RayUnavailable",
    "cpus_per_host",
    "host_slots",
    "require_ray",
]

INSTALL_HINT = (
    "pip install -e '.[ray]' in Conclave's source tree (PyPI's conclave is another project)"
)

LOCAL_OBJECT_STORE_BYTES = 100 * 2**20
"""The object store of a local cluster started for a batch: jobs and outcomes are a few
kilobytes each, so Ray's default (30 % of memory) would only reserve shared memory."""

HOST_RESTARTS = 3
"""How many times Ray starts a host again after its process died (a worker killed, a node
lost): past that, the host is gone and its lanes end."""

HOST_RESTART_WAIT_S = 120.0
"""How long a host that died may take to answer again (Ray starts a new process, which
imports Conclave) before its lanes end."""
HOST_RETRY_EVERY_S = 0.5

PROBE_TIMEOUT_S = 5.0
"""How long ``--address`` may take to accept a connection: Ray itself retries an address
where nothing listens for minutes before it gives up."""


class RayMissing(Exception):
    """Ray is not installed (or cannot be imported); the message says how to install it."""


class RayUnavailable(Exception):
    """No Ray cluster could be reached or started; the message says what to do."""


LOOPBACK_ONLY_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Set to ``0`` before Ray is imported, Ray takes the node's address to be 127.0.0.1 (as it
always does on Windows and macOS): a cluster started for one batch listens on loopback only,
and is not reachable from (nor talks to) the network."""


def require_ray(address: str | None = None) -> ModuleType:
    """``ray``, imported now; :class:`RayMissing` if it cannot be. Without ``address`` (nor
    ``RAY_ADDRESS``) the batch will start its own cluster: then, unless Ray was imported
    already, it will listen on loopback only (:data:`LOOPBACK_ONLY_ENV`)."""
    if address is None and not os.environ.get("RAY_ADDRESS"):
        os.environ.setdefault(LOOPBACK_ONLY_ENV, "0")
    try:
        return importlib.import_module("ray")
    except ImportError as exc:
        raise RayMissing(
            f"--engine ray needs Ray, which is not installed ({exc}); install it with "
            f"{INSTALL_HINT}, or drop --engine ray to run the batch on this machine"
        ) from None


def host_slots(cpus: float, concurrency: int) -> list[int]:
    """Runs at a time on each host: one host per whole CPU of the cluster (at least one,
    at most one per run), ``concurrency`` split as evenly as possible. A run mostly waits
    on its LLMs, so a host takes many; one process per CPU is what its share of the runs'
    own work (events, logs, prompts) can use, as with ``--workers``."""
    hosts = max(1, min(concurrency, math.floor(cpus)))
    return split_slots(concurrency, hosts)


def cpus_per_host(cpus: float, hosts: int) -> float:
    """What each host asks of Ray so that ``hosts`` of them fit in ``cpus``: rounded down
    to Ray's precision (1/10,000), at least that much. A cluster that reports no CPUs (one
    that scales up on demand) is asked for a whole CPU per host."""
    if cpus <= 0:
        return 1.0
    return max(math.floor(cpus / hosts * 10_000) / 10_000, 0.0001)


@attrs.frozen(kw_only=True)
class Cluster:
    """The cluster a batch runs on, as it was when the batch connected."""

    address: str | None
    """As given; ``None`` for a cluster started for the batch."""
    started: bool
    """Started by this batch (then shut down with it)."""
    nodes: int
    cpus: float

    def describe(self) -> str:
        where = (
            "started a local Ray cluster"
            if self.address is None and self.started
            else f"connected to the Ray cluster at {self.address or 'the current session'}"
        )
        return f"{where} ({_count(self.nodes, 'node')}, {self.cpus:g} CPUs)"


class RayEngine:
    """Runs the batch's jobs on :class:`~actors.batch.ray_host.RunHost` actors; see the
    module docstring.

    Without an ``address`` and without a Ray session already open in the process (a test's,
    say), ``run`` starts a local cluster and shuts it down when it returns; ``RAY_ADDRESS``
    is honoured as Ray honours it. A session that was already open is used and left open.
    """

    def __init__(
        self,
        concurrency: int,
        *,
        address: str | None = None,
        say: Callable[[str], None] | None = None,
    ) -> None:
        self.concurrency = concurrency
        self.address = address
        self._say = say or (lambda _: None)
        self._counter: Counter | None = None
        self._halt = trio.CancelScope()
        self._stopped = False
        self.lost: list[str] = []
        """One line per run Ray could not run to its end (its host's process or node
        died), and per host gone for good: those runs were not reported."""
        self.nodes: collections.Counter[str] = collections.Counter()
        """Host → runs it reported."""
        self.workers: set[tuple[str, int]] = set()
        """(host, pid) of every Ray worker process that reported a run."""
        self.cluster: Cluster | None = None

    async def run(self, work: BatchWork, report: Report) -> None:
        """Connect (or start a cluster), start the hosts, keep each one's share of runs in
        flight until the jobs run out, kill the hosts and disconnect. Raises
        :class:`RayMissing` or :class:`RayUnavailable` before anything runs. Cancelled (or
        halted), it stops waiting at once and kills the hosts, which ends their runs."""
        ray = require_ray(self.address)
        counter = self._counter = Counter(len(work.jobs))
        if self._stopped:
            counter.close()
        with self._halt, _open_cluster(ray, self.address) as cluster:
            self.cluster = cluster
            self._say(cluster.describe())
            slots = host_slots(cluster.cpus, self.concurrency)
            actor = ray.remote(RunHost)
            options = {
                "num_cpus": cpus_per_host(cluster.cpus, len(slots)),
                "max_restarts": HOST_RESTARTS,
                # A retry would reuse the run's log directory, which a run creates
                # exclusively; a lost run runs again on resume, in a new one.
                "max_task_retries": 0,
                "scheduling_strategy": "SPREAD",
            }
            cache_dir = None if work.cache_dir is None else work.cache_dir.resolve()
            hosts = [actor.options(max_concurrency=n, **options).remote(cache_dir) for n in slots]
            token = trio.lowlevel.current_trio_token()
            gone: set[int] = set()

            async def run_job(host: Any, index: int) -> bool:
                """Run job ``index`` on ``host``; ``False`` once the host is gone."""
                job = job_by_key_names(work.jobs[index], os.environ)
                try:
                    ran: TaskOutcome = await _result(host.run.remote(job, index), token)
                except ray.exceptions.RayError as exc:
                    key = work.jobs[index].key
                    self.lost.append(f"the Ray worker running {key} failed ({_first(exc)})")
                    return await _answers(ray, host, token)
                if ran.outcome is None:
                    if not self._stopped:  # every other run would be refused alike
                        self.lost.append(f"{ran.refused}; the batch stopped starting runs")
                        self.stop_starting()
                    return True
                outcome = ran.outcome
                log_dir = work.jobs[index].log_dir
                if ran.logs is not None and ran.scratch is not None and log_dir is not None:
                    try:
                        outcome = bring_back(outcome, ran.logs, ran.scratch, log_dir)
                    except OSError as exc:
                        self._say(f"{work.jobs[index].key}: its logs could not be kept ({exc})")
                self.nodes[outcome.node] += 1
                self.workers.add((outcome.node, ran.pid))
                report(outcome)
                return True

            async def lane(number: int, host: Any) -> None:
                while (index := counter.claim()) is not None:
                    if not await run_job(host, index):
                        if number not in gone:
                            gone.add(number)
                            self.lost.append(
                                f"a Ray worker process running {slots[number]} runs at a "
                                f"time is gone (Ray starts one again {HOST_RESTARTS} times "
                                "at most); its share of the runs was not given to another"
                            )
                        return

            try:
                async with trio.open_nursery() as nursery:
                    for number, (host, n) in enumerate(zip(hosts, slots, strict=True)):
                        for _ in range(n):
                            nursery.start_soon(lane, number, host)
            finally:
                for host in hosts:  # halted or cancelled, their runs in flight end here
                    ray.kill(host, no_restart=True)
        if self.nodes:
            ran = ", ".join(f"{host} ({n:,})" for host, n in self.nodes.most_common())
            processes = _count(len(self.workers), "worker process", "worker processes")
            self._say(f"Ray: {_count(self.nodes.total(), 'run')} in {processes} on {ran}")

    def stop_starting(self) -> None:
        self._stopped = True
        if self._counter is not None:
            self._counter.close()

    def halt(self) -> None:
        self.stop_starting()
        self._halt.cancel()


async def _answers(ray: ModuleType, host: Any, token: trio.lowlevel.TrioToken) -> bool:
    """Whether ``host`` answers (after Ray started it again), or is gone for good. While
    Ray restarts it, a call may be refused as unavailable: asked again, for a while."""
    with trio.move_on_after(HOST_RESTART_WAIT_S):
        while True:
            try:
                await _result(host.ping.remote(), token)
            except ray.exceptions.ActorUnavailableError:
                await trio.sleep(HOST_RETRY_EVERY_S)
                continue
            except ray.exceptions.RayError:
                return False
            return True
    return False


async def _result(ref: Any, token: trio.lowlevel.TrioToken) -> Any:
    """The value behind ``ref``, awaited without a thread: Ray completes its future in a
    thread of its own, which wakes this task through the trio token."""
    future = ref.future()
    done = trio.Event()

    def wake(_: object) -> None:
        with suppress(trio.RunFinishedError):  # the batch was abandoned meanwhile
            token.run_sync_soon(done.set)

    future.add_done_callback(wake)
    await done.wait()
    return future.result()


@contextmanager
def _open_cluster(ray: ModuleType, address: str | None) -> Iterator[Cluster]:
    """The Ray session the batch runs in: the process's own if one is open, else one
    connected to ``address`` (or ``RAY_ADDRESS``), else a local cluster started for the
    batch; shut down on the way out."""
    if ray.is_initialized():
        yield _cluster(ray, address, started=False)
        return
    flag = "--address"
    if address is None and os.environ.get("RAY_ADDRESS"):
        address, flag = os.environ["RAY_ADDRESS"], "RAY_ADDRESS"
    if address is not None:
        _probe(address, flag)
    options: dict[str, Any] = {
        # "local": a cluster of the batch's own, never the machine's current one (the one
        # `ray start` left in Ray's temporary directory, perhaps gone since).
        "address": address if address is not None else "local",
        "log_to_driver": False,
        "logging_level": logging.ERROR,
    }
    if address is None:
        options |= {
            "include_dashboard": False,
            "object_store_memory": LOCAL_OBJECT_STORE_BYTES,
        }
    main_thread = threading.current_thread() is threading.main_thread()
    sigterm = signal.getsignal(signal.SIGTERM) if main_thread else None
    try:
        ray.init(**options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = f"{flag} {address}" if address is not None else "a local Ray cluster"
        raise RayUnavailable(
            f"{where}: Ray could not start ({_first(exc)}); check the address, or start a "
            "cluster with `ray start --head` and pass the address it prints"
            + (_token_hint() if address is not None else "")
        ) from None
    finally:
        # ray.init takes SIGTERM over (to exit at once); the batch's own handling stands.
        if main_thread:
            signal.signal(signal.SIGTERM, sigterm)
    try:
        yield _cluster(ray, address, started=address is None)
    finally:
        ray.shutdown()


AUTH_MODE_ENV = "RAY_AUTH_MODE"


def _token_hint() -> str:
    """Ray 2.60's ``ray start --head`` turns token authentication on, and a driver that
    does not send the token is turned away as if nothing were there: say what to set."""
    if os.environ.get(AUTH_MODE_ENV, "").lower() == "token":
        return (
            f"; {AUTH_MODE_ENV}=token is set: check that the token is the cluster's "
            "(RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token)"
        )
    return (
        "; if the cluster uses token authentication (`ray start --head` turns it on from "
        f"Ray 2.60), set {AUTH_MODE_ENV}=token and give the cluster's token (`ray "
        "get-auth-token` on the head prints it) in RAY_AUTH_TOKEN, or in the file "
        "RAY_AUTH_TOKEN_PATH names, or in ~/.ray/auth_token"
    )


def _cluster(ray: ModuleType, address: str | None, *, started: bool) -> Cluster:
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    cpus = float(ray.cluster_resources().get("CPU", 0.0))
    return Cluster(address=address, started=started, nodes=len(nodes), cpus=cpus)


def _probe(address: str, flag: str) -> None:
    """Fail at once, and clearly, when nothing listens at ``address`` (``host:port``, or
    ``ray://host:port`` for Ray Client); ``auto`` is left to Ray."""
    host_port = address.removeprefix("ray://")
    host, sep, port = host_port.rpartition(":")
    if not sep or not port.isdigit():
        if address == "auto":
            return
        raise RayUnavailable(
            f"{flag} {address}: expected HOST:PORT (as `ray start --head` prints it), "
            "ray://HOST:PORT or auto"
        )
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_TIMEOUT_S):
            pass
    except OSError as exc:
        raise RayUnavailable(
            f"{flag} {address}: nothing answers there ({exc.strerror or exc}); start a "
            "cluster with `ray start --head` and pass the address it prints, or leave out "
            "--address to start a local one"
        ) from None


def _first(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _count(n: int, noun: str, nouns: str | None = None) -> str:
    return f"{n:,} {noun if n == 1 else nouns or noun + 's'}"
