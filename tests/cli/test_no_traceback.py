"""Never a traceback: whatever goes wrong, a command ends with one line naming what failed
and a documented exit code, and ``--output-format json`` prints exactly one JSON object."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import CONCLAVE, TASK, conclave, parse_json


class Boom(RuntimeError):
    pass


@pytest.fixture
def broken_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Something inside the run raises what nobody expected."""

    def explode(*_args: object, **_kwargs: object) -> None:
        raise Boom("the flux capacitor\nleaked")

    monkeypatch.setattr("conclave.ui.headless.command.trio.run", explode)


@pytest.mark.usefixtures("broken_run")
def test_an_unexpected_exception_ends_with_one_line_and_exit_code_1(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--config", str(fast_config), TASK])

    out, err = capsys.readouterr()
    assert code == ExitCode.FAILED
    assert out == ""
    last = err.splitlines()[-1]
    assert last.startswith("conclave run: internal error: Boom: the flux capacitor leaked")
    assert "Traceback" not in err


@pytest.mark.usefixtures("broken_run")
def test_an_unexpected_exception_with_json_output_prints_one_error_object(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--output-format", "json", "--config", str(fast_config), TASK])

    data = parse_json(capsys.readouterr().out)
    assert code == ExitCode.FAILED
    assert data["exit_code"] == ExitCode.FAILED
    assert "internal error: Boom" in data["error"]


@pytest.mark.usefixtures("broken_run")
def test_conclave_traceback_shows_where_an_unexpected_exception_came_from(
    fast_config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONCLAVE_TRACEBACK", "1")

    main(["run", "--config", str(fast_config), TASK])

    assert "Traceback" in capsys.readouterr().err


def test_an_unexpected_exception_in_another_command_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode(path: str, **_: object) -> int:
        raise Boom("validate broke")

    monkeypatch.setattr("conclave.ui.headless.validate.validate_command", explode)

    code = main(["validate", str(tmp_path / "any.yaml")])

    assert code == ExitCode.FAILED
    assert "conclave validate: internal error: Boom: validate broke" in capsys.readouterr().err


def test_a_usage_error_with_json_output_prints_one_error_object(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["run", "--output-format", "json", "--refinement", "maybe", TASK])

    out, err = capsys.readouterr()
    assert code == ExitCode.USAGE
    data = parse_json(out)
    assert data["exit_code"] == ExitCode.USAGE
    assert "argument --refinement: invalid choice: 'maybe'" in data["error"]
    assert "argument --refinement" in err


def test_a_config_error_with_json_output_prints_one_error_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--output-format=json", "--config", str(tmp_path / "missing.yaml"), TASK])

    data = parse_json(capsys.readouterr().out)
    assert code == ExitCode.USAGE
    assert data == {
        "error": f"conclave: cannot read config {tmp_path / 'missing.yaml'}: "
        "No such file or directory",
        "exit_code": 2,
    }


def test_a_usage_error_from_the_installed_command_with_json_is_one_object(
    tmp_path: Path,
) -> None:
    done = conclave("run", "--output-format", "json", "--agents", "many", TASK, cwd=tmp_path)

    assert done.returncode == ExitCode.USAGE
    assert json.loads(done.stdout)["exit_code"] == ExitCode.USAGE
    assert "Traceback" not in done.stderr


def test_a_closed_stdin_is_no_task_rather_than_a_crash(tmp_path: Path) -> None:
    done = subprocess.run(
        f"'{CONCLAVE}' run <&-", shell=True, cwd=tmp_path, capture_output=True, text=True
    )

    assert done.returncode == ExitCode.USAGE
    assert "no task given" in done.stderr
    assert "Traceback" not in done.stderr
