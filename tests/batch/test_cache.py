"""``--cache DIR``: identical requests reuse the recorded reply, so a re-run of a graded
batch is reproducible and free; the summary says the key and the hit rate. Off by
default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conclave.actors.llm.cache import CacheStatistics, ResponseCache
from conclave.actors.llm.protocol import ChatMessage, Completion, CompletionRequest, Usage
from conclave.benchmarks.http_server import model_name, open_server_process
from conclave.config.schema import AgentConfig, ScriptedBackendConfig
from conclave.ui.batch.cache_summary import count_cache
from tests.batch.helpers import batch, results, tasks, write_tasks

Capsys = pytest.CaptureFixture[str]

SINGLE = ("--agent-mode", "single", "--refinement", "off")
"""One agent answering once: its prompts are the same from run to run."""


def test_without_cache_nothing_is_recorded_or_said(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(1))

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config, *SINGLE)

    assert "response cache" not in ran.out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fast.yaml", "out.jsonl", "tasks.jsonl"]


def test_a_rerun_answers_from_the_cache_with_the_same_answers_and_no_tokens(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(3))
    first = batch(capsys, source, "--out", "one.jsonl", "--config", fast_config, "--cache",
                  "replies", *SINGLE)  # fmt: skip

    again = batch(
        capsys, source, "--out", "two.jsonl", "--config", fast_config, "--cache", "replies",
        *SINGLE, "--summary-json", "summary.json",
    )  # fmt: skip

    assert "response cache replies: 0 of 3 calls answered from it (hit rate 0.0%)" in first.out
    assert "response cache replies: 3 of 3 calls answered from it (hit rate 100.0%)" in again.out
    assert "key: sha256 of key version 1, the epoch, the agent's id" in again.out
    before = {r["id"]: r for r in results(tmp_path / "one.jsonl")}
    after = {r["id"]: r for r in results(tmp_path / "two.jsonl")}
    assert {k: r["final_answer"] for k, r in after.items()} == {
        k: r["final_answer"] for k, r in before.items()
    }
    assert all(r["input_tokens"] > 0 for r in before.values())
    assert all(r["input_tokens"] == r["output_tokens"] == 0 for r in after.values())
    cache = json.loads((tmp_path / "summary.json").read_text())["cache"]
    assert (cache["hits"], cache["misses"], cache["hit_rate"]) == (3, 0, 1.0)


def test_a_cached_rerun_of_a_priced_batch_costs_nothing_and_calls_no_server(
    tmp_path: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(2))
    with open_server_process(latency=0.0, jitter=0.0) as server:
        backend = {
            "type": "openai", "model": model_name("a", 1), "base_url": server.url,
            "api_key": "sk-loopback-test",
            "price": {"input_per_mtok": 1000.0, "output_per_mtok": 1000.0},
        }  # fmt: skip
        config = tmp_path / "priced.yaml"
        config.write_text(yaml.safe_dump({"agents": [{"id": "a", "backend": backend}]}))
        batch(capsys, source, "--out", "one.jsonl", "--config", config, "--cache", "c", *SINGLE)
        served = server.stats()

        batch(capsys, source, "--out", "two.jsonl", "--config", config, "--cache", "c", *SINGLE)

        assert server.stats()["requests"] == served["requests"]
    assert all(r["cost_usd"] > 0 for r in results(tmp_path / "one.jsonl"))
    assert all(r["cost_usd"] == 0.0 for r in results(tmp_path / "two.jsonl"))


async def test_an_entry_that_cannot_be_read_is_a_miss_and_is_written_again(
    tmp_path: Path,
) -> None:
    cache = ResponseCache(tmp_path)
    agent = AgentConfig(id="a", backend=ScriptedBackendConfig())
    request = CompletionRequest(messages=(ChatMessage(role="user", content="hi"),))
    key = cache.key(agent, request)
    reply = Completion(message=ChatMessage(role="assistant", content="hello"), usage=Usage())
    (tmp_path / key[:2]).mkdir()
    (tmp_path / key[:2] / f"{key}.json").write_text('{"message": {"role": "assis')

    assert await cache.lookup(key) is None
    await cache.record(key, reply)

    assert await cache.lookup(key) == reply
    assert (cache.statistics().hits, cache.statistics().misses) == (1, 1)


def test_each_epoch_is_a_fresh_sample_and_a_rerun_reuses_each_epochs_own(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(2))
    flags = ("--config", fast_config, "--cache", "replies", "--epochs", "3", *SINGLE)

    first = batch(capsys, source, "--out", "one.jsonl", *flags)
    again = batch(capsys, source, "--out", "two.jsonl", *flags)

    assert "0 of 6 calls answered from it" in first.out
    assert "6 of 6 calls answered from it" in again.out


def test_a_process_cache_figures_are_its_newest_totals_whatever_order_they_arrive_in() -> None:
    counts: dict[tuple[str, int], CacheStatistics] = {}

    count_cache(counts, ("a", 1), CacheStatistics(hits=2, misses=1))
    count_cache(counts, ("a", 1), CacheStatistics(hits=1, misses=1))  # an older reply, late
    count_cache(counts, ("b", 1), CacheStatistics(hits=0, misses=1))

    assert counts == {
        ("a", 1): CacheStatistics(hits=2, misses=1),
        ("b", 1): CacheStatistics(hits=0, misses=1),
    }
