"""Which config a run uses: ``--config``, then ``./.conclave/config.yaml``, then
``~/.config/conclave/config.yaml`` (``$XDG_CONFIG_HOME`` when set), then the scripted
default; a run that found a file says which on stderr (text mode)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conclave.config.discovery import ConfigOrigin, discover_config, user_config
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode

TASK = "Name three uses of a paperclip"


def _write(path: Path, agent_id: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"agents: [{{id: {agent_id}, backend: {{latency: 0}}}}]\n"
        "orchestrator: {quiet_period: null}\n",
        encoding="utf-8",
    )
    return path


@pytest.fixture
def project() -> Path:
    return _write(Path.cwd() / ".conclave" / "config.yaml", "from-project")


@pytest.fixture
def user(tmp_path: Path) -> Path:
    return _write(tmp_path / "xdg" / "conclave" / "config.yaml", "from-user")


def test_config_flag_wins_over_every_file(project: Path, user: Path, tmp_path: Path) -> None:
    found = discover_config(str(tmp_path / "given.yaml"))
    assert found.path == tmp_path / "given.yaml"
    assert found.origin is ConfigOrigin.FLAG


def test_the_project_config_wins_over_the_user_config(project: Path, user: Path) -> None:
    found = discover_config(None)
    assert found.path == project
    assert found.origin is ConfigOrigin.PROJECT


def test_the_user_config_is_used_without_a_project_config(user: Path) -> None:
    found = discover_config(None)
    assert found.path == user
    assert found.origin is ConfigOrigin.USER


def test_without_any_file_the_run_uses_the_scripted_default() -> None:
    found = discover_config(None)
    assert found.path is None
    assert found.origin is ConfigOrigin.DEFAULT


def test_the_user_config_is_under_dot_config_when_xdg_config_home_is_unset(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user_config({}) == tmp_path / "home" / ".config" / "conclave" / "config.yaml"


def test_a_relative_xdg_config_home_is_ignored_as_the_spec_says(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    expected = tmp_path / "home" / ".config" / "conclave" / "config.yaml"
    assert user_config({"XDG_CONFIG_HOME": "relative/dir"}) == expected


def test_a_run_without_config_uses_the_project_config_and_says_so(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--output-format", "json", TASK]) == ExitCode.OK
    out, err = capsys.readouterr()
    assert json.loads(out)["winner"] == "from-project"
    assert f"using config {project}" not in err  # json mode: no extra stderr line

    assert main(["run", TASK]) == ExitCode.OK
    err = capsys.readouterr().err
    assert f"conclave: using config {project} (this directory's .conclave/config.yaml)\n" in err


def test_a_run_without_config_uses_the_user_config_and_says_so(
    user: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", TASK]) == ExitCode.OK
    err = capsys.readouterr().err
    assert f"conclave: using config {user} (your user config)\n" in err


def test_agents_flag_asks_for_the_scripted_default_whatever_files_exist(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--agents", "2", "--output-format", "json", TASK]) == ExitCode.OK
    assert json.loads(capsys.readouterr().out)["winner"].startswith("scripted")


def test_a_broken_discovered_config_is_refused_naming_the_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    broken = Path.cwd() / ".conclave" / "config.yaml"
    broken.parent.mkdir()
    broken.write_text("agents: [{id: a, backend: {type: opnai}}]\n", encoding="utf-8")

    assert main(["run", TASK]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert f"{broken}:1:34: agents[0].backend.type: backend type 'opnai'" in err
