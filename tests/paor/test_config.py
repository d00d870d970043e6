"""``loop: free | paor`` per agent, ``paor:`` limits, and ``--loop``."""

from __future__ import annotations

from pathlib import Path

import pytest

from conclave.config.loader import ConfigError, read_config_text
from conclave.config.resolver import RunFlags, resolve
from conclave.config.schema import AgentConfig, LoopKind, PaorConfig
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode


def test_an_agent_runs_the_free_loop_unless_told() -> None:
    agent = AgentConfig(id="a")
    assert agent.loop is LoopKind.FREE
    assert agent.paor == PaorConfig(max_iterations=15, max_depth=2)


def test_loop_and_paor_load_from_yaml() -> None:
    text = "agents:\n  - id: a\n    loop: paor\n    paor: {max_iterations: 4, max_depth: 0}\n"
    [agent] = read_config_text(text, source="c.yaml", environ={}).config.agents
    assert agent.loop is LoopKind.PAOR
    assert agent.paor == PaorConfig(max_iterations=4, max_depth=0)


def test_bad_loop_and_paor_values_are_refused_with_line_and_column() -> None:
    text = "agents:\n  - id: a\n    loop: paro\n    paor:\n      max_iterations: 0\n"
    with pytest.raises(ConfigError) as caught:
        read_config_text(text, source="c.yaml", environ={})
    assert str(caught.value).splitlines() == [
        "c.yaml:3:11: agents[0].loop: loop 'paro' is not one of: free, paor; did you mean 'paor'?",
        "c.yaml:5:23: agents[0].paor.max_iterations: 'max_iterations' must be a whole number "
        "from 1 to 1000; got 0",
    ]


def test_the_loop_flag_sets_every_agents_loop() -> None:
    resolved = resolve(RunFlags(agents=3, loop=LoopKind.PAOR))
    assert [a.loop for a in resolved.base.agents] == [LoopKind.PAOR] * 3


def test_an_unknown_loop_flag_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--loop", "wild", "task"]) == ExitCode.USAGE
    assert "argument --loop: invalid choice: 'wild'" in capsys.readouterr().err


def test_the_paor_config_is_documented() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert "### `paor`" in doc
