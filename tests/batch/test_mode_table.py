"""``conclave batch`` finishes its config for each mode through the one resolver, as
``conclave run`` does: the mode table applied once, to the config before any mode, and the
readiness checks made on what each mode will run, not on the whole panel first."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.batch.helpers import batch, results, tasks, write_tasks
from tests.cli.helpers import fast_agents, write_config

Capsys = pytest.CaptureFixture[str]


def test_single_mode_runs_one_agent_of_a_panel_too_big_for_all_to_all(
    tmp_path: Path, capsys: Capsys
) -> None:
    # 300 agents that all see each other are refused (past 256): single mode runs one of them.
    panel = write_config(tmp_path / "panel.yaml", fast_agents(300))
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(1))

    ran = batch(
        capsys,
        source,
        "--out",
        "out.jsonl",
        "--config",
        panel,
        "--compare-modes",
        "single,single-norefine",
        "--agent",
        "agent-7",
    )

    assert ran.code == 0, ran.err
    lines = results(tmp_path / "out.jsonl")
    assert sorted(line["mode"] for line in lines) == ["single", "single-norefine"]
    assert {line["winner"] for line in lines} == {"agent-7"}


def test_multi_mode_of_that_panel_is_refused_as_run_refuses_it(
    tmp_path: Path, capsys: Capsys
) -> None:
    panel = write_config(tmp_path / "panel.yaml", fast_agents(300))
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(1))

    ran = batch(capsys, source, "--dry-run", "--config", panel, "--compare-modes", "single,multi")

    assert ran.code == 2
    assert "visibility 'all' with 300 agents is all-to-all" in ran.err
