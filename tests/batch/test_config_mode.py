"""``conclave batch`` runs every task in the config's top-level ``mode:`` unless ``--mode``
names another, as ``conclave run`` and the REPL do."""

from __future__ import annotations

from pathlib import Path

import pytest

from conclave.config.resolver import UsageError
from conclave.config.schema.modes import CollaborationMode
from conclave.ui.batch.setup import prepare
from conclave.ui.cli import build_parser
from tests.batch.helpers import tasks, write_tasks
from tests.cli.helpers import write_config


def _collaboration(tmp_path: Path, *flags: str) -> CollaborationMode:
    config = write_config(tmp_path / "plan.yaml", [{"id": "a", "latency": 0}])
    config.write_text(config.read_text() + "mode: plan\n")
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(1))
    args = build_parser().parse_args(
        ["batch", str(source), "--dry-run", "--config", str(config), *flags]
    )
    return prepare(args).collaboration


def test_the_configs_mode_is_every_runs_mode(tmp_path: Path) -> None:
    assert _collaboration(tmp_path) is CollaborationMode.PLAN


def test_the_mode_flag_wins_over_the_configs(tmp_path: Path) -> None:
    assert _collaboration(tmp_path, "--mode", "execute") is CollaborationMode.EXECUTE


def test_compared_configs_that_set_different_modes_are_refused_without_the_mode_flag(
    tmp_path: Path,
) -> None:
    plan = write_config(tmp_path / "plan.yaml", [{"id": "a", "latency": 0}])
    plan.write_text(plan.read_text() + "mode: plan\n")
    plain = write_config(tmp_path / "plain.yaml", [{"id": "b", "latency": 0}])
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(1))
    compare = ["batch", str(source), "--dry-run", "--compare", str(plan), str(plain)]

    with pytest.raises(UsageError, match=r"set different modes \(plan: plan, plain: default\)"):
        prepare(build_parser().parse_args(compare))
    both = prepare(build_parser().parse_args([*compare, "--mode", "execute"]))
    assert both.collaboration is CollaborationMode.EXECUTE
