"""The PAOR specs run in a temporary directory (runs write sessions under ./.conclave), and
the rename scenario's fixture repository."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _run_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sessions are written under ./.conclave: keep them out of the repository."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A small package whose function ``old_total`` is defined once and used twice."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "util.py").write_text("def old_total(xs):\n    return sum(xs)\n")
    (root / "app.py").write_text(
        "from util import old_total\n\n\ndef report(xs):\n    return f'total {old_total(xs)}'\n"
    )
    (root / "test_app.py").write_text(
        "from app import report\nfrom util import compute_total\n\n"
        "assert compute_total([1, 2]) == 3\nassert report([1, 2]) == 'total 3'\nprint('ok')\n"
    )
    return root
