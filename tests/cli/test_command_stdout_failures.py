"""The commands whose output is the point, when stdout cannot take it: ``replay`` (the
timeline), ``validate`` (the verdict), ``import massgen`` (the converted config), ``mcp list``
(the list) and ``chat`` (the replies). A stdout closed before the command started (``>&-``)
or full (``> /dev/full``) is said on stderr in one line naming what could not be written, and
the command exits 1: never exit 0 with nothing written, nor "internal error". A reader that
left (``| head``) ends the command quietly. Real processes: only a process of its own can
start with its stdout closed."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import (
    CONCLAVE,
    TASK,
    close_stdout,
    conclave,
    fast_agents,
    with_reader_gone,
    write_config,
)

MASSGEN = Path(__file__).parents[1] / "config_import" / "massgen" / "with_ui.yaml"
NO_SPACE = "No space left on device"


def _closed(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``conclave ARGS >&-``."""
    return subprocess.run(
        [str(CONCLAVE), *args],
        cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, timeout=60, preexec_fn=close_stdout,
    )  # fmt: skip


def _full(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``conclave ARGS > /dev/full``."""
    with open("/dev/full", "w") as full:
        return subprocess.run(
            [str(CONCLAVE), *args],
            cwd=cwd, stdin=subprocess.DEVNULL, stdout=full, stderr=subprocess.PIPE, text=True,
            timeout=60,
        )  # fmt: skip


Stdout = Callable[..., subprocess.CompletedProcess[str]]
STDOUTS = pytest.mark.parametrize(
    ("stdout", "why"), [(_closed, "it is closed"), (_full, NO_SPACE)], ids=["closed", "full"]
)


def _said(done: subprocess.CompletedProcess[str]) -> str:
    """The one line on stderr about stdout; the command never crashed."""
    assert "Traceback" not in done.stderr
    assert "internal error" not in done.stderr
    assert "Exception ignored" not in done.stderr
    [line] = [line for line in done.stderr.splitlines() if "stdout" in line]
    return line


@pytest.fixture
def run_log(fast_config: Path, tmp_path: Path) -> str:
    """A finished run's directory, ``run``, for replay."""
    done = conclave("run", "--config", str(fast_config), "--log-dir", "run", TASK, cwd=tmp_path)
    assert done.returncode == ExitCode.OK, done.stderr
    return "run"


@pytest.fixture
def chat_config(tmp_path: Path) -> Path:
    return write_config(tmp_path / "chat.yaml", fast_agents(2), interactive_mode={})


def test_replay_with_a_closed_stdout_says_it_cannot_write_the_timeline_and_exits_1(
    run_log: str, tmp_path: Path
) -> None:
    done = _closed("replay", run_log, cwd=tmp_path)

    assert done.returncode == ExitCode.FAILED
    assert _said(done) == "conclave replay: cannot write the timeline to stdout (it is closed)"


def test_replay_with_a_full_stdout_says_it_cannot_write_the_timeline_and_exits_1(
    run_log: str, tmp_path: Path
) -> None:
    done = _full("replay", run_log, cwd=tmp_path)

    assert done.returncode == ExitCode.FAILED
    assert _said(done) == f"conclave replay: cannot write the timeline to stdout ({NO_SPACE})"


def test_replay_whose_reader_left_ends_quietly(run_log: str, tmp_path: Path) -> None:
    code, err = with_reader_gone("replay", run_log, cwd=tmp_path)

    assert code == ExitCode.OK
    assert err == ""


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_validate_with_a_closed_stdout_says_so_with_the_verdict_and_exits_1(
    as_json: bool, fast_config: Path, tmp_path: Path
) -> None:
    done = _closed("validate", "fast.yaml", *(["--json"] if as_json else []), cwd=tmp_path)

    assert done.returncode == ExitCode.FAILED
    assert _said(done) == (
        "conclave validate: cannot write the result to stdout (it is closed); fast.yaml is valid"
    )


def test_validate_with_a_full_stdout_says_so_with_the_verdict_and_exits_1(
    tmp_path: Path,
) -> None:
    (tmp_path / "bad.yaml").write_text("agents: 3\n")

    done = _full("validate", "bad.yaml", "--json", cwd=tmp_path)

    assert done.returncode == ExitCode.FAILED
    assert _said(done) == (
        f"conclave validate: cannot write the result to stdout ({NO_SPACE}); bad.yaml has 1 problem"
    )


def test_validate_of_a_bad_config_in_text_writes_nothing_on_stdout_so_a_closed_one_is_no_error(
    tmp_path: Path,
) -> None:
    (tmp_path / "bad.yaml").write_text("agents: 3\n")

    done = _closed("validate", "bad.yaml", cwd=tmp_path)

    assert done.returncode == ExitCode.USAGE
    assert "stdout" not in done.stderr


@STDOUTS
def test_import_with_a_stdout_that_cannot_take_the_config_says_so_and_exits_1(
    stdout: Stdout, why: str, tmp_path: Path
) -> None:
    done = stdout("import", "massgen", str(MASSGEN), cwd=tmp_path)

    assert done.returncode == ExitCode.FAILED
    assert _said(done) == (
        f"conclave import massgen: cannot write the converted config to stdout ({why}); "
        "-o CONCLAVE.yaml writes it to a file"
    )
    assert "converted:" not in done.stderr  # the summary is for a config that was written


@STDOUTS
def test_mcp_list_with_a_stdout_that_cannot_take_the_list_says_so_and_exits_1(
    stdout: Stdout, why: str, fast_config: Path, tmp_path: Path
) -> None:
    done = stdout("mcp", "list", "--config", "fast.yaml", cwd=tmp_path)

    assert done.returncode == ExitCode.FAILED
    assert _said(done) == f"conclave mcp list: cannot write the list to stdout ({why})"


@pytest.mark.parametrize("output_format", ["text", "json"])
@STDOUTS
def test_chat_with_a_stdout_that_cannot_take_the_replies_says_so_and_exits_1(
    stdout: Stdout, why: str, output_format: str, chat_config: Path, tmp_path: Path
) -> None:
    done = stdout(
        "chat", "--config", "chat.yaml", "--output-format", output_format, "Which agents?",
        cwd=tmp_path,
    )  # fmt: skip

    assert done.returncode == ExitCode.FAILED
    line = _said(done)
    assert line.startswith(f"conclave chat: cannot write the replies to stdout ({why}); ")
    assert line.partition("; ")[2].startswith("the conversation is in session ")


def test_a_chat_usage_error_with_a_full_stdout_keeps_its_exit_code_2(
    chat_config: Path, tmp_path: Path
) -> None:
    done = _full("chat", "--config", "chat.yaml", "--output-format", "json", cwd=tmp_path)

    assert done.returncode == ExitCode.USAGE
    assert done.stderr == (
        "conclave chat: no message given: pass MESSAGE (one per turn), or pipe lines on stdin\n"
    )
