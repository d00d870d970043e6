"""Running ``conclave batch`` for the specs: in-process through ``ui.cli.main`` (runs take
milliseconds on zero-latency scripted agents), as a subprocess where signals matter."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest

from conclave.ui.cli import main

FAILING = {"agents": [{"id": "broken", "backend": {"error_rate": 1.0}}]}
"""Overrides under which a run fails: its one agent's every call errors."""


def write_tasks(path: Path, lines: Sequence[Mapping[str, Any] | str]) -> Path:
    """One line per item: a dict as JSON, a string as it is."""
    text = "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines)
    path.write_text(text, encoding="utf-8")
    return path


def tasks(n: int, **extra: Any) -> list[dict[str, Any] | str]:
    return [{"id": f"t{i}", "task": f"Task number {i}", **extra} for i in range(n)]


@attrs.frozen
class Ran:
    code: int
    out: str
    err: str


def batch(capsys: pytest.CaptureFixture[str], *args: str | Path) -> Ran:
    capsys.readouterr()
    code = main(["batch", *(str(a) for a in args)])
    captured = capsys.readouterr()
    return Ran(code=code, out=captured.out, err=captured.err)


def results(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
