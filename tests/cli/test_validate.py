"""``conclave validate CONFIG`` checks a config and exits: 0 if it loads, 2 with the
loader's message if not."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import write_config
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
