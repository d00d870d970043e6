"""``--model`` and ``--max-cost``: what they change, and what they refuse before a run starts.
Their effect on real runs is specified in test_real_backends.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from conclave.actors.coordination.state import Answer
from conclave.actors.run.result import RunResult, Termination
from conclave.actors.run.usage import AgentUsage, RunUsage
from conclave.config.resolver import RunFlags, resolve, with_model
from conclave.config.schema import AgentConfig, ConclaveConfig, ScriptedBackendConfig
from conclave.config.schema.endpoint import Price
from conclave.config.schema.openai import OpenAIBackendConfig
from conclave.config.secret import Secret
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from conclave.ui.summary import summary
from tests.cli.helpers import TASK, parse_json, write_config


def _openai(agent_id: str, *, price: Price | None = None) -> AgentConfig:
    backend = OpenAIBackendConfig(model="gpt-configured", api_key=Secret("sk-x"), price=price)
    return AgentConfig(id=agent_id, backend=backend)


def _scripted(agent_id: str) -> AgentConfig:
    return AgentConfig(id=agent_id, backend=ScriptedBackendConfig())


PRICE = Price(input_per_mtok=1.0, output_per_mtok=2.0)


def test_model_replaces_the_model_of_every_agent_that_has_one() -> None:
    config = ConclaveConfig(agents=(_openai("a"), _scripted("s"), _openai("b")))

    changed = with_model(config, "gpt-other")

    models = [getattr(a.backend, "model", None) for a in changed.agents]
    assert models == ["gpt-other", None, "gpt-other"]
    assert changed.agents[1] == config.agents[1]


def test_model_with_only_scripted_agents_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["run", "--model", "gpt-4o", TASK])

    assert code == ExitCode.USAGE
    assert "--model: no agent in this config talks to a model" in capsys.readouterr().err


def test_max_cost_without_any_priced_agent_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["run", "--max-cost", "1.50", TASK])

    assert code == ExitCode.USAGE
    assert "--max-cost: no agent's backend has a price" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "a dollar"])
def test_max_cost_must_be_a_positive_number_of_dollars(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--max-cost", value, TASK])

    assert code == ExitCode.USAGE
    assert "expected a number of dollars > 0" in capsys.readouterr().err


def test_max_cost_says_which_agents_it_does_not_count(tmp_path: Path) -> None:
    price = {"input_per_mtok": 1.0, "output_per_mtok": 2.0}
    paid = {"id": "paid", "type": "openai", "model": "m", "api_key": "sk-x", "price": price}
    config = write_config(tmp_path / "mixed.yaml", [paid, {"id": "free", "latency": 0}])

    resolved = resolve(RunFlags(config=str(config), max_cost=1.0))

    note = resolved.max_cost_note()
    assert note is not None
    assert "the calls of 1 agent without a price (free) are not counted" in note


def test_the_text_summary_shows_what_the_run_cost() -> None:
    usage = RunUsage(total=AgentUsage(input_tokens=1000, calls=3, cost_usd=0.0123))
    result = RunResult(
        final_answer="x",
        winner="a",
        presenter="a",
        strategy="winner_present",
        answers=[Answer(label="agent1.1", agent="a", content="x")],
        votes={},
        rounds=2,
        llm_calls=3,
        restarts=0,
        termination=Termination.COMPLETED,
        failed_agents={},
        log_dir=None,
        duration_s=1.0,
        usage=usage,
        cost_usd=0.0123,
    )

    assert summary(result).endswith("1.00s, $0.0123")


def test_the_inject_in_flight_policy_can_be_chosen(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--config", str(fast_config), "--in-flight-policy", "inject", TASK])

    assert code == ExitCode.OK, capsys.readouterr().err


def test_max_cost_says_at_start_which_agents_it_counts_at_an_estimate(tmp_path: Path) -> None:
    price = {"input_per_mtok": 1.0, "output_per_mtok": 2.0}
    quiet = {"id": "quiet", "type": "openai", "model": "m", "api_key": "sk-x", "price": price}
    config = write_config(tmp_path / "quiet.yaml", [quiet | {"stream_usage": False}])

    resolved = resolve(RunFlags(config=str(config), max_cost=1.0))

    assert resolved.max_cost_note() == (
        "--max-cost cannot read what the calls of 1 agent (quiet) use: stream_usage is false, "
        "so the server reports no usage; they count at an estimate of a token per 3 characters "
        "sent or received"
    )


def test_the_text_summary_says_the_cost_limit_counted_calls_at_an_estimate() -> None:
    usage = RunUsage(
        total=AgentUsage(input_tokens=None, calls=3, calls_without_usage=2, cost_usd=None)
    )
    result = RunResult(
        final_answer="x",
        winner="a",
        presenter=None,
        strategy="winner_present",
        answers=[Answer(label="agent1.1", agent="a", content="x")],
        votes={},
        rounds=2,
        llm_calls=3,
        restarts=0,
        termination=Termination.MAX_COST,
        failed_agents={},
        log_dir=None,
        duration_s=1.0,
        usage=usage,
        cost_usd=None,
    )

    assert summary(result).endswith(
        "; the cost limit counted 2 calls whose server reported no usage at an estimate"
    )


def _priced_scripted(tmp_path: Path) -> Path:
    price = {"input_per_mtok": 1000.0, "output_per_mtok": 1000.0}
    agents = [{"id": f"s{i}", "seed": i, "latency": 0, "price": price} for i in (1, 2)]
    return write_config(tmp_path / "priced-scripted.yaml", agents)


def test_a_scripted_run_with_a_price_reports_what_it_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _priced_scripted(tmp_path)

    code = main(["run", "--config", str(config), "--output-format", "json", TASK])

    data = parse_json(capsys.readouterr().out)
    assert code == ExitCode.OK
    assert data["cost_usd"] > 0
    assert data["usage"]["total"]["cost_usd"] == data["cost_usd"]


def test_max_cost_below_a_priced_scripted_runs_cost_stops_it_with_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _priced_scripted(tmp_path)
    main(["run", "--config", str(config), "--output-format", "json", TASK])
    whole_run = parse_json(capsys.readouterr().out)["cost_usd"]

    code = main(
        ["run", "--config", str(config), "--output-format", "json", "--max-cost",
         str(whole_run / 4), TASK]
    )  # fmt: skip

    data = parse_json(capsys.readouterr().out)
    assert code == ExitCode.TIMEOUT
    assert data["termination"] == "max_cost"
    assert data["cost_usd"] < whole_run
