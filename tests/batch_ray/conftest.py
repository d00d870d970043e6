"""Ray for the specs: every cluster they start listens on loopback only (set before Ray is
imported, and inherited by every ``conclave`` they start), and batches write into the
test's own directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conclave.actors.batch.ray_engine import LOOPBACK_ONLY_ENV
from tests.cli.helpers import fast_agents, write_config

os.environ[LOOPBACK_ONLY_ENV] = "0"


@pytest.fixture
def fast_config(tmp_path: Path) -> Path:
    """Two scripted agents with zero latency: a run takes milliseconds."""
    return write_config(tmp_path / "fast.yaml", fast_agents(2))


@pytest.fixture
def slow_config(tmp_path: Path) -> Path:
    """One scripted agent, 50 ms a call: a run takes a few tenths of a second."""
    return write_config(tmp_path / "slow.yaml", [{"id": "s", "seed": 1, "latency": 0.05}])


@pytest.fixture(autouse=True)
def _run_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
