"""What a new user runs into first: pipes that close early, bad paths and numbers, and
runs too large for all-to-all visibility."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import CONCLAVE, TASK, conclave


def test_output_piped_into_head_ends_quietly(fast_config: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        f"'{CONCLAVE}' run --config '{fast_config}' --output-format stream-json '{TASK}' | head -1",
        shell=True,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
    )

    assert done.stdout.startswith('{"type": "run_started"')
    assert "Traceback" not in done.stderr
    assert "BrokenPipeError" not in done.stderr


@pytest.mark.parametrize("seconds", ["nan", "inf", "0", "-1"])
def test_a_timeout_that_is_not_a_finite_positive_number_exits_2(
    seconds: str, tmp_path: Path
) -> None:
    done = conclave("run", "--timeout", seconds, TASK, cwd=tmp_path)

    assert done.returncode == ExitCode.USAGE
    assert "--timeout" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_log_dir_that_cannot_be_created_exits_2_naming_it(
    fast_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")

    code = main(["run", "--config", str(fast_config), "--log-dir", str(blocker / "run"), TASK])

    assert code == ExitCode.USAGE
    assert f"--log-dir {blocker / 'run'}" in capsys.readouterr().err


def test_all_to_all_visibility_is_refused_past_256_agents_with_the_alternatives(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["run", "--agents", "300", TASK])

    err = capsys.readouterr().err
    assert code == ExitCode.USAGE
    assert "limited to 256 agents" in err
    assert "use visibility ring or islands:K" in err
    assert "--visibility" in err


def test_replay_accepts_the_run_directory(
    fast_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    assert (
        main(["run", "--config", str(fast_config), "--log-dir", str(run_dir), TASK]) == ExitCode.OK
    )
    capsys.readouterr()

    assert main(["replay", str(run_dir)]) == ExitCode.OK
    assert "run ended: completed" in capsys.readouterr().out


def test_version_names_the_package(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == ExitCode.OK
    assert capsys.readouterr().out.startswith("conclave ")


def test_islands_as_large_as_the_run_are_all_to_all_and_hit_the_same_limit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["run", "--agents", "300", "--visibility", "islands:300", TASK])

    assert code == ExitCode.USAGE
    assert "visibility 'islands:300' with 300 agents is all-to-all" in capsys.readouterr().err


def test_islands_smaller_than_the_run_pass_the_all_to_all_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["run", "--agents", "300", "--visibility", "islands:299", "--timeout", "0.01", TASK]
    )

    assert code != ExitCode.USAGE, capsys.readouterr().err


def test_more_agents_than_a_run_takes_are_refused_with_the_bound(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "--agents", "100001", TASK]) == ExitCode.USAGE
    assert "expected a whole number >= 1 and <= 100,000, got 100001" in capsys.readouterr().err


def test_a_timeout_past_a_week_is_refused_with_the_bound(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["run", "--timeout", "1e9", TASK]) == ExitCode.USAGE
    assert "seconds > 0 and <= 604800" in capsys.readouterr().err


def test_the_help_imports_nothing_heavy_so_it_starts_fast(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from conclave.ui.cli import main\n"
        "assert main(['--help']) == 0\n"
        "heavy = {'trio', 'attrs', 'cattrs', 'yaml', 'orjson',\n"
        "    'conclave.actors', 'conclave.runtime'}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy\n"
        "    or '.'.join(m.split('.')[:2]) in heavy))\n"
    )

    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=30
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"


def test_a_misspelt_command_is_refused_with_the_command_it_resembles_not_run_as_a_task(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["valdate", "conclave.yaml"])

    err = capsys.readouterr().err
    assert code == ExitCode.USAGE
    assert "unknown command 'valdate'; did you mean 'validate'?" in err
    assert 'conclave run "valdate conclave.yaml"' in err


def test_a_one_word_task_far_from_every_command_still_runs(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["Paperclips", "--config", str(fast_config)]) == ExitCode.OK


def test_a_misspelt_option_is_refused_by_its_commands_parser_with_the_closest_option(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["run", "--agnets", "3", TASK])

    err = capsys.readouterr().err
    assert code == ExitCode.USAGE
    assert err.startswith("usage: conclave run ")
    assert "conclave run: error: unrecognized arguments: --agnets" in err
    assert "(did you mean --agents?)" in err
