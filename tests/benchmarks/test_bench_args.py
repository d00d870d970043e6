"""A benchmark's ``main`` (``measure_and_report``): a bad ``--json`` stops it before
measuring, a report that cannot be written is said with exit 1 and the table still printed,
and a missed target exits 1; the argument types say what they expected."""

from __future__ import annotations

import argparse
import errno
from pathlib import Path
from typing import Any

import pytest

from conclave.benchmarks import bench_args
from conclave.benchmarks.bench_args import measure_and_report, positive_ints


def _table(report: dict[str, Any]) -> str:
    return f"figure {report['figure']}"


def test_a_directory_for_the_report_exits_2_before_measuring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    measured: list[bool] = []

    def measure() -> dict[str, Any]:
        measured.append(True)
        return {"figure": 1}

    code = measure_and_report(str(tmp_path), measure, _table)

    assert code == 2
    assert measured == []
    assert capsys.readouterr().err.startswith("error: --json ")


def test_a_report_the_disk_refuses_exits_1_after_printing_the_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def full_disk(path: Path, text: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(bench_args, "write_report", full_disk)

    code = measure_and_report(str(tmp_path / "r.json"), lambda: {"figure": 7}, _table)

    printed = capsys.readouterr()
    assert code == 1
    assert "figure 7" in printed.out
    assert "No space left on device" in printed.err
    assert not (tmp_path / "r.json").exists()


def test_a_written_report_exits_by_whether_its_target_was_met(tmp_path: Path) -> None:
    out = tmp_path / "r.json"

    assert measure_and_report(str(out), lambda: {"figure": 1}, _table) == 0
    assert out.read_text() == '{\n  "figure": 1\n}\n'
    assert measure_and_report(str(out), lambda: {"figure": 2}, _table, met=lambda r: False) == 1


def test_a_list_of_counts_is_whole_numbers_separated_by_commas() -> None:
    assert positive_ints("1,10,100") == [1, 10, 100]


@pytest.mark.parametrize(
    ("given", "said"),
    [("1;10", "separated by commas"), ("1,x", "separated by commas"), ("5,0", ">= 1")],
)
def test_a_bad_list_of_counts_says_what_was_expected(given: str, said: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=said):
        positive_ints(given)
