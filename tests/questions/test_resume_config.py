"""A paused run keeps the text of the config file it ran with (``paused-config.yaml``), so
``conclave resume`` needs neither the file nor it unchanged; a paused run that kept none (paused
before copies were kept) whose file is gone is refused naming the file, where it was and what
to do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conclave.config.loader import load_config
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from conclave.ui.headless.questions import CONFIG_COPY, config_snapshot
from tests.cli.helpers import TASK, write_config
from tests.questions.helpers import CRITICAL


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _asking_config(tmp_path: Path) -> Path:
    ask = {"tool": "ask_user", "arguments": CRITICAL}
    return write_config(tmp_path / "pq2.yaml", [{"id": "a1", "latency": 0, "tool_steps": [ask]}])


def _paused(config: Path) -> Path:
    log = config.parent / "paused"
    args = ["run", "--config", config.name, "--log-dir", str(log), "--on-question", "pause"]
    assert main([*args, TASK]) == ExitCode.PAUSED
    return log


def test_a_paused_run_keeps_its_config_files_text(tmp_path: Path) -> None:
    config = _asking_config(tmp_path)
    log = _paused(config)
    assert (log / CONFIG_COPY).read_text(encoding="utf-8") == config.read_text(encoding="utf-8")


def test_a_paused_run_resumes_with_its_config_file_gone(tmp_path: Path) -> None:
    config = _asking_config(tmp_path)
    log = _paused(config)
    config.unlink()

    assert main(["resume", str(log), "--answer", "delete"]) == ExitCode.OK


def test_a_paused_run_resumes_with_the_config_it_paused_with_not_the_file_edited_since(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _asking_config(tmp_path)
    log = _paused(config)
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["agents"][0]["id"] = "renamed"  # would not replay the paused coordination
    config.write_text(yaml.safe_dump(data), encoding="utf-8")

    assert main(["resume", str(log), "--answer", "delete"]) == ExitCode.OK


def test_a_paused_run_without_a_copy_whose_config_is_gone_is_refused_saying_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _asking_config(tmp_path)
    log = _paused(config)
    (log / CONFIG_COPY).unlink()  # as a run paused before copies were kept left it
    config.unlink()
    capsys.readouterr()

    code = main(["resume", str(log), "--answer", "delete", "--output-format", "json"])

    assert code == ExitCode.USAGE
    out, err = capsys.readouterr()
    assert err.strip() == (
        f"conclave resume: the paused run's config pq2.yaml is gone (it was {config}; {log} "
        f"keeps no {CONFIG_COPY}): put the config back there to resume, or run the task again"
    )
    assert json.loads(out)["error"] == err.strip()


def _keyed(tmp_path: Path, api_key: str) -> Path:
    path = tmp_path / "keyed.yaml"
    backend = f"{{type: openai, model: m, base_url: 'https://example.com/v1', api_key: {api_key}}}"
    path.write_text(f"agents:\n- id: a\n  backend: {backend}\n", encoding="utf-8")
    return path


def test_a_config_holding_a_key_written_out_is_not_kept(tmp_path: Path) -> None:
    path = _keyed(tmp_path, "sk-written-out-0123456789")
    assert config_snapshot(path, load_config(path)) is None


def test_a_config_whose_keys_are_variables_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KEY", "sk-from-the-environment-0123")
    path = _keyed(tmp_path, "'${KEY}'")
    assert config_snapshot(path, load_config(path)) == path.read_text(encoding="utf-8")


def test_a_paused_run_whose_working_directory_is_gone_is_refused_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    log = _paused(_asking_config(work))
    moved = tmp_path / "paused"
    log.rename(moved)
    monkeypatch.chdir(tmp_path)
    work.rename(tmp_path / "elsewhere")
    capsys.readouterr()

    code = main(["resume", str(moved), "--answer", "delete"])

    assert code == ExitCode.USAGE
    assert capsys.readouterr().err.strip() == (
        f"conclave resume: the paused run's working directory {work} is gone: the resumed run "
        "runs there (relative --config and --context paths mean there); recreate it to resume, "
        "or run the task again"
    )
