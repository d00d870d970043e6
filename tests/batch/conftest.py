from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import fast_agents, write_config


@pytest.fixture
def fast_config(tmp_path: Path) -> Path:
    """Two scripted agents with zero latency: a run takes milliseconds."""
    return write_config(tmp_path / "fast.yaml", fast_agents(2))


@pytest.fixture(autouse=True)
def _run_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep whatever a batch writes by default out of the repository."""
    monkeypatch.chdir(tmp_path)
