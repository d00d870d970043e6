"""``conclave validate CONFIG`` checks a config and exits: 0 if it loads, 2 with the
loader's message if not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import TASK, fast_agents, write_config
from ui.cli import main
from ui.exit_codes import ExitCode


def test_a_good_config_validates(fast_config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(fast_config)]) == ExitCode.OK
    assert capsys.readouterr().out == f"{fast_config}: ok (3 agents: agent-1, agent-2, agent-3)\n"


def test_a_bad_config_fails_validation_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(tmp_path / "bad.yaml", [{"id": "a", "misbehave": "sulk"}])

    assert main(["validate", str(cfg)]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "config.agents[0].backend.misbehave" in err
    assert "valid values: no_call, both_calls" in err


def test_validate_refuses_all_to_all_past_256_agents_as_run_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(tmp_path / "big.yaml", fast_agents(257), visibility="all")

    assert main(["validate", str(cfg)]) == ExitCode.USAGE
    validate_error = capsys.readouterr().err
    assert main(["run", "--config", str(cfg), TASK]) == ExitCode.USAGE
    run_error = capsys.readouterr().err
    assert "limited to 256 agents" in validate_error
    assert validate_error == run_error


def test_validate_refuses_islands_as_large_as_the_run_as_all_to_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(tmp_path / "big.yaml", fast_agents(300), visibility="islands:300")

    assert main(["validate", str(cfg)]) == ExitCode.USAGE
    assert "visibility 'islands:300' with 300 agents is all-to-all" in capsys.readouterr().err


def test_validate_refuses_a_scripted_vote_for_an_agent_that_does_not_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agents = fast_agents(3)
    agents[1]["vote"] = "agent7"
    cfg = write_config(tmp_path / "c.yaml", agents)

    assert main(["validate", str(cfg)]) == ExitCode.USAGE
    assert (
        "agent 'agent-2' votes for agent7, but the run has 3 agents (agent1 to agent3, "
        "in config order)"
    ) in capsys.readouterr().err


def test_run_refuses_a_scripted_vote_for_an_agent_that_does_not_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agents = fast_agents(3)
    agents[1]["vote"] = "agent7"
    cfg = write_config(tmp_path / "c.yaml", agents)

    assert main(["run", "--config", str(cfg), TASK]) == ExitCode.USAGE
    assert "votes for agent7, but the run has 3 agents" in capsys.readouterr().err


def test_validate_names_a_few_agents_and_counts_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(tmp_path / "many.yaml", fast_agents(1000), visibility="ring")

    assert main(["validate", str(cfg)]) == ExitCode.OK
    assert capsys.readouterr().out == (
        f"{cfg}: ok (1,000 agents: agent-1, agent-2, agent-3, agent-4, agent-5 and 995 more)\n"
    )
