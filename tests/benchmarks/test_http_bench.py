"""``conclave bench --scenario http``: its server answers as the scripted backend would, and
the scenario runs end to end with a tiny N (so it cannot rot), counting what happened.

Real sockets and real time: no ``autojump_clock`` here (virtual time would fire the SDK's
read timeouts at once).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from conclave.actors.llm.pool import open_backends
from conclave.actors.llm.protocol import CompletionRequest
from conclave.actors.run.driver import RunSpec, run
from conclave.benchmarks import http_bench
from conclave.benchmarks.http_bench import (
    TARGETS,
    Target,
    case_for,
    http_config,
    issue_figures,
    run_http_bench,
    targets_met,
)
from conclave.benchmarks.http_costs import (
    LAYERS,
    STARTUP,
    STREAMED_TOKENS,
    answer_request,
    biggest_request,
)
from conclave.benchmarks.http_server import BACKLOG, ScriptedServer, open_server_process, serve
from conclave.benchmarks.load_bench import TASK, Case
from conclave.benchmarks.prompt_cache import TOKEN_CHARS
from conclave.ui.cli import main

# One xdist worker runs this module, so the benchmark behind ``report`` runs once.
pytestmark = pytest.mark.xdist_group("http_bench")

RUN_LIMIT = 60.0


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``conclave bench`` makes its default log root in the working directory."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
async def server_url() -> AsyncIterator[str]:
    """The scripted server in this process, replying at once."""
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve, ScriptedServer(latency=0.0, jitter=0.0))
        yield f"http://127.0.0.1:{port}/v1"
        nursery.cancel_scope.cancel()


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The scenario run once with N = 3, for the specs that read its report."""
    root = tmp_path_factory.mktemp("http_bench")
    out = root / "report.json"
    run_http_bench((3,), out, root / "logs", repeats=5, startup_repeats=1, runs=2)
    data: dict[str, Any] = json.loads(out.read_text())
    return data


def test_the_servers_listen_backlog_holds_every_agents_first_connection() -> None:
    assert BACKLOG >= 128


async def test_a_run_against_the_server_ends_as_the_same_run_on_the_scripted_backend(
    server_url: str,
) -> None:
    case = Case(agents=3, latency=0.0)

    with trio.fail_after(RUN_LIMIT):
        over_http = await run(RunSpec(task=TASK, config=http_config(case, server_url)))
    scripted = await run(RunSpec(task=TASK, config=case.config()))

    assert over_http.termination == scripted.termination
    assert over_http.winner == scripted.winner
    assert over_http.final_answer == scripted.final_answer
    assert over_http.llm_calls == scripted.llm_calls


async def test_the_server_notes_when_the_first_request_arrived() -> None:
    server = ScriptedServer(latency=0.0, jitter=0.0)
    unasked = server.stats.first_request_at
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve, server)
        before = time.time()
        with trio.fail_after(RUN_LIMIT):
            await run(
                RunSpec(
                    task=TASK,
                    config=http_config(Case(agents=2, latency=0.0), f"http://127.0.0.1:{port}/v1"),
                )
            )
        nursery.cancel_scope.cancel()

    assert unasked is None
    first = server.stats.first_request_at
    assert first is not None and before <= first <= time.time()


def test_every_agent_shares_one_endpoint_that_serves_them_all_at_once() -> None:
    config = http_config(case_for(50), "http://127.0.0.1:1/v1")

    assert {a.backend.max_concurrency for a in config.agents} == {50}  # type: ignore[union-attr]
    assert {a.backend.type for a in config.agents} == {"openai"}


def test_past_a_hundred_agents_the_scenario_runs_on_a_ring() -> None:
    assert case_for(100).visibility == "all"
    assert case_for(200).visibility == "ring"


def test_the_server_process_exits_when_the_benchmark_leaves_it() -> None:
    with open_server_process() as server:
        process = server.process

    assert process.returncode is not None


def test_the_tiny_scenario_completes_with_the_scripted_request_count(
    report: dict[str, Any],
) -> None:
    (row,) = report["scenarios"]["http"]

    assert row["termination"] == "completed"
    assert row["requests"] == row["scripted_requests"] > 0
    assert row["requests_per_run"] == [row["scripted_requests"]] * 2
    assert row["server_errors"] == 0
    assert row["failed_agents"] == 0


def test_every_client_run_is_listed_with_the_load_average_it_met(
    report: dict[str, Any],
) -> None:
    (row,) = report["scenarios"]["http"]

    runs = row["runs"]
    assert [run["requests"] for run in runs] == [row["scripted_requests"]] * 2
    assert all(run["wall_over_ideal"] > 0 and run["client_cpu_ms_per_request"] > 0 for run in runs)
    loads = [run["load_average"] for run in runs]
    assert row["load_average"] == [min(loads), max(loads)]
    assert min(loads) >= 0


def test_the_report_has_every_figure_of_the_table(report: dict[str, Any]) -> None:
    (row,) = report["scenarios"]["http"]

    for column in http_bench.COLUMNS:
        assert column in row
    assert row["process_wall_s"] > row["wall_s"] > 0
    assert 0 < row["first_request_s"] < row["process_wall_s"]
    assert 0 < row["first_request_cpu_s"] < row["process_cpu_s"]
    assert 300 < row["first_request_modules"] < 2000
    assert row["ideal_s"] > 0
    assert row["client_cpu_ms_per_request"] > 0
    assert row["peak_rss_mb"] > 0


def test_the_report_says_what_starting_up_and_exiting_cost_by_import(
    report: dict[str, Any],
) -> None:
    rows = report["scenarios"]["http_startup"]

    assert [r["imports"] for r in rows] == [label for label, _ in STARTUP]
    assert all(r["run_s"] > 0 and r["exit_s"] >= 0 for r in rows)


def test_the_report_says_what_one_request_costs_the_client_layer_by_layer(
    report: dict[str, Any],
) -> None:
    rows = report["scenarios"]["http_request_layers"]

    assert [r["layer"] for r in rows] == list(LAYERS)
    assert all(r["client_cpu_ms_per_request"] > 0 for r in rows)
    assert all(r["first_call_cpu_ms"] > 0 for r in rows)


def test_the_report_says_what_a_reply_streamed_token_by_token_costs_per_token(
    report: dict[str, Any],
) -> None:
    streamed = report["scenarios"]["http_streamed_tokens"]

    assert streamed["streamed_pieces"] >= STREAMED_TOKENS
    assert streamed["client_cpu_us_per_token"] > 0


class _Pieces:
    """A sink that keeps the tool-call argument pieces it is streamed."""

    def __init__(self) -> None:
        self.pieces: list[str] = []

    def text(self, delta: str) -> None:
        return None

    def reasoning(self, delta: str) -> None:
        return None

    def tool_arguments(self, index: int, name: str, delta: str) -> None:
        self.pieces.append(delta)

    def retry(self, attempt: int, status: int | None, delay: float, error: str) -> None:
        return None


@pytest.fixture
def first_round_request() -> CompletionRequest:
    """Recorded from a scripted run, outside trio (it runs one of its own)."""
    return answer_request(agents=2)


async def test_the_server_streams_a_reply_one_token_per_chunk_when_asked(
    first_round_request: CompletionRequest,
) -> None:
    server = ScriptedServer(latency=0.0, jitter=0.0, answer_tokens=50, token_chunks=True)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve, server)
        config = http_config(Case(agents=1, latency=0.0), f"http://127.0.0.1:{port}/v1")
        sink = _Pieces()
        async with open_backends() as pool:
            backend = await pool.backend(config.agents[0])
            completion = await backend.complete(first_round_request, sink=sink)
        nursery.cancel_scope.cancel()

    (call,) = completion.message.tool_calls
    assert len(call.arguments) >= 50 * TOKEN_CHARS
    assert sink.pieces and max(len(p) for p in sink.pieces) <= TOKEN_CHARS
    assert "".join(sink.pieces) == call.arguments


def test_the_request_measured_layer_by_layer_is_a_runs_biggest_a_vote_showing_answers() -> None:
    request = biggest_request(agents=3)

    prompt = "".join(m.content for m in request.messages)
    assert {t.name for t in request.tools} == {"new_answer", "vote"}
    assert prompt.count("agent1.1") >= 1 and prompt.count("agent3.1") >= 1


def test_the_report_says_how_loaded_the_machine_was(report: dict[str, Any]) -> None:
    assert len(report["load_average"]) == 3


def _targets_at(n: int) -> list[Target]:
    return [t for t in TARGETS if t.agents in (None, n)]


def _row(agents: int = 50, **figures: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"agents": agents, "scripted_requests": 101}
    row.update(requests=101, command_requests=101)
    row.update({t.column: t.at_most for t in _targets_at(agents)})
    row.update(figures)
    return row


@pytest.mark.parametrize("agents", [50, 200])
def test_a_row_at_every_target_meets_them_all(agents: int) -> None:
    met = targets_met(_row(agents))

    assert set(met) == {t.key for t in _targets_at(agents)} | {"requests"}
    assert all(met.values())


@pytest.mark.parametrize("target", _targets_at(50) + _targets_at(200), ids=lambda t: t.key)
def test_a_figure_past_its_target_is_missed(target: Target) -> None:
    assert target.agents is not None
    row = _row(target.agents, **{target.column: target.at_most * 1.01})

    assert targets_met(row)[target.key] is False


def test_a_run_of_50_agents_may_take_at_most_2n_plus_3_requests() -> None:
    assert targets_met(_row(max_requests_per_run=103))["max_requests_per_run@50"]
    assert not targets_met(_row(max_requests_per_run=104))["max_requests_per_run@50"]


def test_the_issues_figures_say_as_filed_the_target_and_now() -> None:
    rows = [_row(50, wall_over_ideal=1.2, first_request_s=0.2), _row(200, wall_over_ideal=1.1)]

    figures = {f["figure"]: f for f in issue_figures(rows)}

    wall_50 = figures["openai backend over loopback HTTP, 50 agents: wall / ideal"]
    assert (wall_50["filed"], wall_50["target"], wall_50["now"]) == (1.51, "<= 1.15", 1.2)
    assert wall_50["met"] is False
    assert figures["openai backend, 200 agents ring: wall / ideal"]["met"] is True
    start = figures[
        "start-up: `conclave run` with the openai backend, spawned to its first request"
    ]
    assert (start["filed"], start["now"], start["met"]) == (0.64, 0.2, True)


def test_a_figure_whose_n_did_not_run_has_no_value_now() -> None:
    figures = issue_figures([_row(50)])

    ring = next(f for f in figures if "200 agents" in f["figure"])
    assert ring["now"] is None and ring["met"] is None


def test_the_report_lists_the_issues_figures(report: dict[str, Any]) -> None:
    filed = [t.figure for t in TARGETS if t.filed is not None]

    assert [f["figure"] for f in report["issue_24"]] == filed


@pytest.mark.parametrize("count", ["requests", "command_requests"])
def test_a_request_count_other_than_the_scripted_runs_is_missed(count: str) -> None:
    assert targets_met(_row(**{count: 102}))["requests"] is False


def test_size_targets_apply_only_at_their_n() -> None:
    assert "process_wall_s@50" not in targets_met(_row(agents=10))


def _record_runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(http_bench, "run_http_bench", lambda *a: calls.append(a))
    return calls


def test_conclave_bench_runs_the_http_scenario_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _record_runs(monkeypatch)
    out = tmp_path / "h.json"

    code = main(["bench", "--scenario", "http", "--quick", "--json", str(out)])

    assert code == 0
    assert calls == [((10,), out, Path(".conclave/bench"))]


def test_the_http_report_does_not_replace_the_load_benchmarks_default_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _record_runs(monkeypatch)

    main(["bench", "--scenario", "http", "--quick", "--log-root", ".conclave/bench"])

    assert calls[0][1] == Path(http_bench.DEFAULT_JSON)


def test_with_other_scenarios_the_http_report_goes_beside_theirs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _record_runs(monkeypatch)
    ran: list[list[str]] = []

    def load_bench(args: argparse.Namespace) -> int:
        ran.append(args.scenario)
        return 0

    monkeypatch.setattr(http_bench, "load_bench_main", load_bench)

    main(["bench", "--scenario", "storm", "--scenario", "http", "--json", str(tmp_path / "b.json")])

    assert ran == [["storm"]]
    assert calls[0][1] == tmp_path / "b_http.json"


def test_without_a_scenario_conclave_bench_leaves_http_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _record_runs(monkeypatch)
    ran: list[list[str]] = []

    def load_bench(args: argparse.Namespace) -> int:
        ran.append(args.scenario)
        return 0

    monkeypatch.setattr(http_bench, "load_bench_main", load_bench)

    main(["bench", "--quick"])

    assert ran == [["big", "batch", "storm"]]
    assert calls == []
