"""The import-linter contracts in pyproject.toml, as CI checks them: here, the one that keeps
the front ends (the REPL, batch, serve, headless runs) independent of each other. What they
share lives in neutral modules of ``ui`` (progress, summary, signals, text) and in
``config`` (the resolver, the shared run flags), never in one of them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def test_the_front_ends_are_independent_of_each_other() -> None:
    done = subprocess.run(
        [str(LINT_IMPORTS), "--contract", "front-ends", "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    report = " ".join(done.stdout.split())  # the report wraps at the terminal's width
    assert "(repl, batch, serve, headless) are independent of each other KEPT" in report
