"""``conclave batch`` through the real CLI on the scripted backend: results, resume, bad
lines, dry runs, limits, modes and workers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.batch.helpers import FAILING, batch, results, tasks, write_tasks
from tests.cli.helpers import REQUIRED_KEYS

Capsys = pytest.CaptureFixture[str]


def test_each_result_line_is_the_run_json_plus_id_and_mode(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(3))

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config)

    assert ran.code == 0, ran.err
    lines = results(tmp_path / "out.jsonl")
    assert sorted(line["id"] for line in lines) == ["t0", "t1", "t2"]
    for line in lines:
        assert set(line) >= REQUIRED_KEYS
        assert line["mode"] == "multi"
        assert line["termination"] == "completed"
        assert line["node"]


def test_the_summary_table_counts_the_runs_and_their_times(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(4))

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config)

    header, row = ran.out.strip().splitlines()
    assert header.split()[:6] == ["mode", "tasks", "completed", "failed", "timed", "out"]
    assert "p50" in header and "p95" in header and "tokens" in header and "cost" in header
    assert row.split()[:7] == ["multi", "4", "4", "0", "0", "0", row.split()[6]]
    assert int(row.split()[6].replace(",", "")) > 0  # tokens


def test_running_again_skips_the_ids_already_in_results(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(2))
    batch(capsys, source, "--out", "out.jsonl", "--config", fast_config)
    write_tasks(source, tasks(3))

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config)

    assert ran.code == 0
    assert "2 runs already in out.jsonl; skipped" in ran.err
    assert [line["id"] for line in results(tmp_path / "out.jsonl")][2:] == ["t2"]


def test_a_batch_whose_every_task_is_already_in_results_prints_its_summary_and_exits_0(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(2))
    batch(capsys, source, "--out", "out.jsonl", "--config", fast_config)

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config)

    assert ran.code == 0, ran.err
    assert "2 runs already in out.jsonl; skipped" in ran.err
    assert ran.out.splitlines()[1].split()[:3] == ["multi", "2", "2"]
    assert len(results(tmp_path / "out.jsonl")) == 2


def test_a_failed_task_is_kept_on_resume_and_fails_the_exit_code(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", [{"id": "x", "task": "t", "overrides": FAILING}])
    first = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config)

    again = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config)

    assert first.code == again.code == 1
    assert len(results(tmp_path / "out.jsonl")) == 1


def test_the_first_failed_run_says_why_on_stderr(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    failing = {"task": "t", "overrides": FAILING}
    source = write_tasks(tmp_path / "tasks.jsonl", [{"id": "x", **failing}, {"id": "y", **failing}])

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config, "--concurrency", "1")

    reason = results(tmp_path / "out.jsonl")[0]["failure_reason"]
    assert reason
    assert f"x (multi) failed: {reason}; every failed run's reason is" in ran.err
    assert "y (multi) failed" not in ran.err


def test_retry_failed_runs_again_the_tasks_whose_newest_line_did_not_complete(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", [{"id": "x", "task": "t", "overrides": FAILING}])
    batch(capsys, source, "--out", "out.jsonl", "--config", fast_config)
    write_tasks(source, [{"id": "x", "task": "t"}])  # fixed

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config, "--retry-failed")

    assert ran.code == 0
    assert [line["termination"] for line in results(tmp_path / "out.jsonl")] == [
        "failed",
        "completed",
    ]


def test_the_newest_line_of_an_id_wins(tmp_path: Path, fast_config: Path, capsys: Capsys) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", [{"id": "x", "task": "t"}])
    batch(capsys, source, "--out", "out.jsonl", "--config", fast_config)
    out = tmp_path / "out.jsonl"
    [completed] = results(out)
    failed = {**completed, "termination": "failed"}
    out.write_text(json.dumps(failed) + "\n" + json.dumps(completed) + "\n", encoding="utf-8")

    ran = batch(capsys, source, "--out", out, "--config", fast_config, "--retry-failed")

    assert ran.code == 0
    assert len(results(out)) == 2  # nothing ran again: the newest line completed


def test_an_out_file_that_is_not_a_results_file_is_refused_untouched(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(1))
    other = write_tasks(tmp_path / "other-tasks.jsonl", tasks(2))
    before = other.read_bytes()

    ran = batch(capsys, source, "--out", other, "--config", fast_config)

    assert ran.code == 2
    assert "other-tasks.jsonl is not a results file of conclave batch" in ran.err
    assert other.read_bytes() == before


def test_a_last_line_cut_by_a_crash_is_removed_and_its_task_runs_again(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(2))
    batch(capsys, source, "--out", "out.jsonl", "--config", fast_config)
    out = tmp_path / "out.jsonl"
    text = out.read_text(encoding="utf-8")
    out.write_text(text[: len(text) - 40], encoding="utf-8")  # the second line cut short

    ran = batch(capsys, source, "--out", out, "--config", fast_config)

    assert ran.code == 0
    assert "the last line was cut short" in ran.err
    lines = results(out)  # every line parses: the cut one is gone
    assert len(lines) == 2
    assert {line["id"] for line in lines} == {"t0", "t1"}


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("not json at all", "not JSON"),
        ('["a", "list"]', "expected an object"),
        ('{"task": "no id"}', '"id" is missing'),
        ('{"id": "q"}', '"task" is missing'),
        ('{"id": "q", "task": "t", "expcted": 1}', "unknown key 'expcted'"),
        ('{"id": "t0", "task": "again"}', "already used on line 1"),
        (
            '{"id": "q", "task": "t", "overrides": {"orchestrator": {"run_timeout": -1}}}',
            "overrides.orchestrator.run_timeout",
        ),
        ('{"id": "q", "task": "t", "overrides": {"orchestra": {}}}', "unknown key 'orchestra'"),
    ],
)
def test_a_bad_line_is_reported_with_its_number_and_skipped(
    tmp_path: Path, fast_config: Path, capsys: Capsys, line: str, says: str
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", [*tasks(1), line, *tasks(2)[1:]])

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config)

    assert ran.code == 2
    [report] = [e for e in ran.err.splitlines() if "tasks.jsonl:" in e]
    assert report.startswith("conclave batch: ") and "tasks.jsonl:2: " in report
    assert says in report and "skipped" in report
    assert sorted(r["id"] for r in results(tmp_path / "out.jsonl")) == ["t0", "t1"]


def test_overrides_change_the_config_of_their_line_only(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    single = {"agents": [{"id": "solo", "backend": {"latency": 0}}]}
    source = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": "a", "task": "t", "overrides": single}, {"id": "b", "task": "t"}],
    )

    batch(capsys, source, "--out", "out.jsonl", "--config", fast_config)

    winners = {r["id"]: r["winner"] for r in results(tmp_path / "out.jsonl")}
    assert winners["a"] == "solo"
    assert winners["b"] in ("agent-1", "agent-2")


def test_dry_run_checks_every_line_runs_nothing_and_exits_0_when_all_are_good(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(3))

    ran = batch(capsys, source, "--dry-run", "--config", fast_config)

    assert ran.code == 0
    assert "3 good lines, 0 bad lines" in ran.err
    assert not (tmp_path / "out.jsonl").exists()


def test_dry_run_exits_2_and_names_every_bad_line(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    bad_override = {"id": "o", "task": "t", "overrides": {"orchestrator": {"visibility": "x"}}}
    source = write_tasks(tmp_path / "tasks.jsonl", [*tasks(1), "{", bad_override])

    ran = batch(capsys, source, "--out", "out.jsonl", "--dry-run", "--config", fast_config)

    assert ran.code == 2
    assert "tasks.jsonl:2: not JSON" in ran.err
    assert "tasks.jsonl:3: overrides refused" in ran.err
    assert "1 good line, 2 bad lines" in ran.err
    assert not (tmp_path / "out.jsonl").exists()


def test_a_task_past_its_timeout_counts_as_timed_out_and_exits_3(
    tmp_path: Path, capsys: Capsys
) -> None:
    from tests.cli.helpers import write_config

    slow = write_config(tmp_path / "slow.yaml", [{"id": "s", "seed": 1, "latency": 5}])
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(1))

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", slow, "--timeout", "0.2")

    assert ran.code == 3
    [line] = results(tmp_path / "out.jsonl")
    assert line["termination"] == "timeout"
    row = ran.out.strip().splitlines()[1].split()
    assert row[:6] == ["multi", "1", "0", "0", "1", "0"]


def test_progress_without_a_terminal_is_plain_lines_on_stderr(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(2))

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config)

    assert "conclave batch: 2/2 runs, 0 not completed, -," in ran.err
    assert "ETA" in ran.err
    assert "\r" not in ran.err


def test_out_is_required_unless_dry_run(tmp_path: Path, fast_config: Path, capsys: Capsys) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(1))

    ran = batch(capsys, source, "--config", fast_config)

    assert ran.code == 2
    assert "--out RESULTS.jsonl is required" in ran.err


def test_a_missing_tasks_file_is_a_usage_error_naming_it(tmp_path: Path, capsys: Capsys) -> None:
    ran = batch(capsys, "missing.jsonl", "--out", "out.jsonl")

    assert ran.code == 2
    assert "cannot read missing.jsonl" in ran.err


def test_a_missing_csv_tasks_file_is_not_called_json_lines(tmp_path: Path, capsys: Capsys) -> None:
    ran = batch(capsys, "missing.csv", "--out", "out.jsonl")

    assert ran.code == 2
    assert "pass the path of a tasks file (JSON Lines, or CSV with a header row)" in ran.err


def test_workers_share_the_batch_and_the_parent_writes_every_line_once(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(12))

    ran = batch(
        capsys, source, "--out", "out.jsonl", "--config", fast_config,
        "--workers", "2", "--concurrency", "4",
    )  # fmt: skip

    assert ran.code == 0, ran.err
    lines = results(tmp_path / "out.jsonl")
    assert sorted(line["id"] for line in lines) == sorted(f"t{i}" for i in range(12))
    assert all(line["termination"] == "completed" for line in lines)


def test_log_dir_keeps_one_event_log_per_run(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(2))

    batch(capsys, source, "--out", "out.jsonl", "--config", fast_config, "--log-dir", "logs")

    logs = sorted((tmp_path / "logs").glob("*/events.jsonl"))
    assert [p.parent.name.rsplit("-", 1)[0] for p in logs] == ["t0-multi", "t1-multi"]
    assert {r["log_dir"] for r in results(tmp_path / "out.jsonl")} == {
        str(Path("logs") / p.parent.name) for p in logs
    }


@pytest.mark.parametrize("flag", ["--log-dir", "--cache"])
def test_a_directory_flag_that_cannot_be_created_is_refused_before_any_run(
    tmp_path: Path, fast_config: Path, capsys: Capsys, flag: str
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(2))
    (tmp_path / "plain").write_text("a file", encoding="utf-8")

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config, flag, "plain/sub")

    assert ran.code == 2
    assert f"{flag} plain/sub: cannot create it (Not a directory)" in ran.err
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("flag", ["--log-dir", "--cache"])
def test_a_directory_flag_naming_a_file_is_refused_before_any_run(
    tmp_path: Path, fast_config: Path, capsys: Capsys, flag: str
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(2))
    (tmp_path / "plain").write_text("a file", encoding="utf-8")

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config, flag, "plain")

    assert ran.code == 2
    assert f"{flag} plain: is a file, not a directory" in ran.err
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(
    ("summary", "said"),
    [(".", "--summary-json . is a directory"), ("no/s.json", "its directory does not exist")],
)
def test_a_summary_json_path_that_cannot_be_written_is_refused_before_any_run(
    tmp_path: Path, fast_config: Path, capsys: Capsys, summary: str, said: str
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(2))

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config,
                "--summary-json", summary)  # fmt: skip

    assert ran.code == 2
    assert said in ran.err
    assert not (tmp_path / "out.jsonl").exists()


TOO_LONG = "a" * 300
"""A file name longer than a file system takes (255 bytes): ENAMETOOLONG."""


@pytest.mark.parametrize(
    ("flag", "asked"),
    [
        ("--log-dir", "pass a writable directory"),
        ("--cache", "pass a writable directory"),
        ("--summary-json", "pass the path of a file in a writable directory"),
    ],
)
def test_a_path_too_long_for_the_file_system_is_refused_naming_its_flag(
    tmp_path: Path, fast_config: Path, capsys: Capsys, flag: str, asked: str
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(1))

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config, flag, TOO_LONG)

    assert ran.code == 2
    [message] = [line for line in ran.err.splitlines() if TOO_LONG in line]
    assert message.startswith(f"conclave batch: {flag} {TOO_LONG}: ")
    assert "(File name too long)" in message and message.endswith(asked)
    assert "internal error" not in ran.err
    assert not (tmp_path / "out.jsonl").exists()


def test_a_judge_path_too_long_for_the_file_system_is_refused_naming_it(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(1))

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config,
                "--grade", "model", "--judge", TOO_LONG)  # fmt: skip

    assert ran.code == 2
    assert f"--judge {TOO_LONG}: cannot read it (File name too long); pass the judge's config" in (
        ran.err
    )
    assert not (tmp_path / "out.jsonl").exists()


def test_results_may_not_be_written_over_the_tasks_file(tmp_path: Path, capsys: Capsys) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(1))

    ran = batch(capsys, source, "--out", "tasks.jsonl")

    assert ran.code == 2
    assert "--out is the tasks file itself" in ran.err
    assert len(source.read_text().splitlines()) == 1


def test_more_workers_than_concurrency_is_refused(tmp_path: Path, capsys: Capsys) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(1))

    ran = batch(capsys, source, "--out", "o.jsonl", "--workers", "3", "--concurrency", "2")

    assert ran.code == 2
    assert "--workers 3 is more than --concurrency 2" in ran.err


def test_summary_json_holds_the_table_and_the_sessions_times(
    tmp_path: Path, fast_config: Path, capsys: Capsys
) -> None:
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(3))

    batch(capsys, source, "--out", "o.jsonl", "--config", fast_config, "--summary-json", "s.json")

    data = json.loads((tmp_path / "s.json").read_text())
    [mode] = data["modes"]
    assert (mode["mode"], mode["tasks"], mode["completed"]) == ("multi", 3, 3)
    assert data["session"]["runs"] == 3
    assert 0 < data["session"]["runs_wall_s"] <= data["session"]["wall_s"]


def test_a_results_file_that_refuses_a_line_stops_the_batch_with_exit_code_1(
    tmp_path: Path, fast_config: Path, capsys: Capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from conclave.ui.batch.results import ResultsFile

    def full(self: ResultsFile, record: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ResultsFile, "append", full)
    source = write_tasks(tmp_path / "tasks.jsonl", tasks(20))

    ran = batch(capsys, source, "--out", "out.jsonl", "--config", fast_config, "--concurrency", "1")

    assert ran.code == 1
    assert "cannot append to out.jsonl (No space left on device); stopped" in ran.err
    assert ran.out.strip().splitlines()[1].split()[:6] == ["multi", "20", "0", "0", "0", "20"]
