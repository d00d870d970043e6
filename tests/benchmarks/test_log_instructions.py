"""The event log's cost in instructions (benchmarks/log_instructions.py): counted by
Valgrind, a run's figure being two runs' count less one's."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conclave.benchmarks.log_instructions import (
    VALGRIND_MISSING,
    instruction_row,
    measure_log_instructions,
    read_refs,
)

REPORT = """==16603== Cachegrind, a cache and branch-prediction profiler
==16603==
==16603== I   refs:      5,194,606,541
"""


def _valgrind() -> None:
    """Valgrind's presence; without it the spec is skipped, or fails in CI (which installs
    it)."""
    if shutil.which("valgrind") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("valgrind is not installed; CI installs it (.ci/run)")
        pytest.skip("valgrind is not installed (apt-get install valgrind; CI installs it)")


def test_the_count_is_read_from_cachegrinds_report() -> None:
    assert read_refs(REPORT) == 5_194_606_541


def test_a_report_without_a_count_is_an_error_quoting_it() -> None:
    with pytest.raises(ValueError, match=r"no instruction count.*Traceback"):
        read_refs("Traceback (most recent call last): ...")


def test_a_runs_count_is_two_runs_less_one_and_the_verdict_follows_the_target() -> None:
    counts = {
        (False, 1): 5_000_000_000,
        (False, 2): 8_250_000_000,
        (True, 1): 5_400_000_000,
        (True, 2): 8_975_000_000,
    }

    row = instruction_row(200, counts, 0.15)

    assert (row["instructions_off_m"], row["instructions_on_m"]) == (3_250.0, 3_575.0)
    assert row["log_cost_instructions"] == "+10.0%"
    assert row["met"] is True
    assert instruction_row(200, {**counts, (True, 2): 9_300_000_000}, 0.15)["met"] is False


def test_without_valgrind_the_row_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)

    assert measure_log_instructions(200, 0.15) == {"agents": 200, "error": VALGRIND_MISSING}


def test_a_counted_process_that_fails_is_an_error_naming_its_exit_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failing = tmp_path / "valgrind"
    failing.write_text("#!/bin/sh\necho 'valgrind: cannot start' >&2\nexit 3\n")
    failing.chmod(0o755)
    monkeypatch.setattr(shutil, "which", lambda name: str(failing))

    with pytest.raises(RuntimeError, match=r"failed \(exit 3\).*cannot start"):
        measure_log_instructions(200, 0.15)


def test_a_logged_run_counts_more_instructions_than_one_without_its_log() -> None:
    _valgrind()

    row = measure_log_instructions(3, 0.15)

    assert 0 < row["instructions_off_m"] < row["instructions_on_m"]
    assert row["log_cost_instructions"].startswith("+")
