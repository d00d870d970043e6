"""``conclave report``: the figures of RESULTS files as Markdown tables, and a
self-contained HTML file (its content here; tests/batch/test_report_browser.py opens it in
a real browser)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from conclave.ui.cli import main
from tests.batch.helpers import Ran, batch, results, tasks, write_tasks
from tests.cli.helpers import write_config

Capsys = pytest.CaptureFixture[str]


def report(capsys: Capsys, *args: str | Path) -> Ran:
    capsys.readouterr()
    code = main(["report", *(str(a) for a in args)])
    captured = capsys.readouterr()
    return Ran(code=code, out=captured.out, err=captured.err)


def _compared(tmp_path: Path, capsys: Capsys, answer: str = "It is 42.") -> Path:
    single = write_config(tmp_path / "single.yaml", [{"id": "s", "latency": 0, "answer_text": "4"}])
    panel = write_config(
        tmp_path / "panel.yaml", [{"id": "p", "latency": 0, "answer_text": answer}]
    )
    lines = [
        {"id": f"t{i}", "task": f"Task {i}", "expected": 42, "category": ["trivia", "math"][i % 2]}
        for i in range(4)
    ]
    source = write_tasks(tmp_path / "tasks.jsonl", lines)
    ran = batch(
        capsys, source, "--out", "results.jsonl", "--compare", single, panel, "--epochs", "2",
        "--grade", "numeric", "--log-dir", "logs",
    )  # fmt: skip
    assert ran.code == 0, ran.err
    return tmp_path / "results.jsonl"


def test_the_report_prints_the_batchs_figures_as_markdown_tables(
    tmp_path: Path, capsys: Capsys
) -> None:
    out = _compared(tmp_path, capsys)

    ran = report(capsys, out)

    assert ran.code == 0, ran.err
    sections = ran.out.strip().split("\n\n")
    assert sections[0] == "## Summary"
    summary = sections[1].splitlines()
    assert summary[0].startswith("| config | runs | completed |")
    assert summary[1].startswith("|---|---:|")
    assert summary[2].startswith("| single | 8 | 8 |") and "| 0.0% (0/8) |" in summary[2]
    assert summary[3].startswith("| panel | 8 | 8 |") and "| 100.0% (8/8) |" in summary[3]
    assert sections[2] == "## Paired differences against single"
    assert sections[3].splitlines()[2].startswith("| panel | 4 | +100.0 pts |")
    assert sections[4] == "## Accuracy per category"
    assert sections[5].splitlines()[2] == "| math | 0.0% (0/4) | 100.0% (4/4) |"


def test_two_results_files_with_one_variant_name_are_told_apart_by_file(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(2))
    batch(capsys, source, "--out", "before.jsonl", "--config", fast_config)
    batch(capsys, source, "--out", "after.jsonl", "--config", fast_config)

    ran = report(capsys, "before.jsonl", "after.jsonl")

    assert ran.code == 0, ran.err
    rows = [line.split(" | ")[0] for line in ran.out.splitlines() if line.startswith("| ")]
    assert rows[1:3] == ["| before:multi", "| after:multi"]


def test_a_results_file_that_cannot_be_read_is_named(tmp_path: Path, capsys: Capsys) -> None:
    ran = report(capsys, "missing.jsonl")

    assert ran.code == 2
    assert "conclave report: cannot read missing.jsonl (No such file or directory)" in ran.err


def test_an_html_path_that_cannot_be_written_is_a_usage_error_with_nothing_printed(
    tmp_path: Path, capsys: Capsys
) -> None:
    out = _compared(tmp_path, capsys)

    ran = report(capsys, out, "--html", "missing-dir/report.html")

    assert ran.code == 2
    assert "--html missing-dir/report.html: No such file or directory" in ran.err
    assert ran.out == ""


def test_an_html_path_naming_a_directory_is_a_usage_error_saying_so(
    tmp_path: Path, capsys: Capsys
) -> None:
    out = _compared(tmp_path, capsys)
    (tmp_path / "reports").mkdir()

    ran = report(capsys, out, "--html", "reports")

    assert ran.code == 2
    assert "--html reports is a directory; pass the path of a file" in ran.err
    assert ran.out == ""


@pytest.mark.parametrize(
    "html", ["a" * 300 + ".html", "a" * 300 + "/report.html"], ids=["file", "directory"]
)
def test_an_html_path_too_long_for_the_file_system_is_a_usage_error_naming_it(
    tmp_path: Path, capsys: Capsys, html: str
) -> None:
    out = _compared(tmp_path, capsys)

    ran = report(capsys, out, "--html", html)

    assert ran.code == 2
    assert f"conclave report: --html {html}: File name too long; pass a writable path" in ran.err
    assert "internal error" not in ran.err
    assert ran.out == ""


def test_a_failed_html_write_leaves_the_earlier_report_whole_and_no_stray_file(
    tmp_path: Path, capsys: Capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _compared(tmp_path, capsys)
    (tmp_path / "report.html").write_text("the earlier report", encoding="utf-8")

    def disk_full(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", disk_full)
    ran = report(capsys, out, "--html", "report.html")

    assert ran.code == 2 and "No space left on device" in ran.err
    assert (tmp_path / "report.html").read_text(encoding="utf-8") == "the earlier report"
    assert not list(tmp_path.glob(".report.html.*"))


def test_the_html_report_is_one_file_that_loads_nothing_from_elsewhere(
    tmp_path: Path, capsys: Capsys
) -> None:
    out = _compared(tmp_path, capsys)

    ran = report(capsys, out, "--html", "report.html")

    assert ran.code == 0, ran.err
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert page.count("<svg") == 3
    assert not re.search(r"<(script|img|link|iframe)[^>]*\s(src|href)=", page)
    assert not re.search(r"url\(", page)


def test_an_answer_cannot_break_out_of_the_reports_data(tmp_path: Path, capsys: Capsys) -> None:
    hostile = "</script><script>document.title='pwned'</script> 42"
    out = _compared(tmp_path, capsys, answer=hostile)

    report(capsys, out, "--html", "report.html")

    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert hostile not in page
    data = page.split('<script type="application/json" id="samples">')[1].split("</script>")[0]
    assert {s["final_answer"] for s in json.loads(data) if s["variant"] == "panel"} == {hostile}


def test_each_sample_links_its_event_log_relative_to_the_report(
    tmp_path: Path, capsys: Capsys
) -> None:
    out = _compared(tmp_path, capsys)
    (tmp_path / "site").mkdir()

    report(capsys, out, "--html", "site/report.html")

    page = (tmp_path / "site" / "report.html").read_text(encoding="utf-8")
    data = page.split('<script type="application/json" id="samples">')[1].split("</script>")[0]
    samples = json.loads(data)
    assert len(samples) == len(results(out)) == 16
    for sample in samples:
        assert sample["log"].startswith("../logs/") and sample["log"].endswith("/events.jsonl")
        assert (tmp_path / "site" / sample["log"]).is_file()
