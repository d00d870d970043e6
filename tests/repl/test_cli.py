"""``conclave repl`` and a bare ``conclave`` in a terminal: the flags, checked before the
terminal is taken over."""

from __future__ import annotations

import argparse
import io

import pytest

from conclave.ui import cli
from conclave.ui.exit_codes import ExitCode


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _started(monkeypatch: pytest.MonkeyPatch) -> list[argparse.Namespace]:
    """Record the REPL's starts instead of starting it."""
    started: list[argparse.Namespace] = []

    def repl_command(args: argparse.Namespace) -> int:
        started.append(args)
        return ExitCode.OK

    monkeypatch.setattr("conclave.ui.repl.app.repl_command", repl_command)
    return started


def test_a_bare_conclave_with_a_terminal_on_stdin_starts_the_repl(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started = _started(monkeypatch)
    monkeypatch.setattr("sys.stdin", _Terminal())
    assert cli.main([]) == ExitCode.OK
    [args] = started
    assert (args.mode, args.agent_mode, args.refinement) == ("default", "multi", "on")


def test_conclave_repl_takes_the_starting_modes(monkeypatch: pytest.MonkeyPatch) -> None:
    started = _started(monkeypatch)
    argv = ["repl", "--mode", "plan", "--agent-mode", "single", "--refinement", "off"]
    assert cli.main(argv) == ExitCode.OK
    [args] = started
    assert (args.mode, args.agent_mode, args.refinement) == ("plan", "single", "off")


def test_an_invalid_mode_names_the_valid_ones_and_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["repl", "--mode", "turbo"]) == ExitCode.USAGE
    assert 'invalid mode "turbo". Valid modes: default, plan, execute' in capsys.readouterr().err


def test_a_config_the_run_would_refuse_is_refused_before_the_repl_starts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["repl", "--agents", "1000"]) == ExitCode.USAGE
    assert "visibility 'all' with 1,000 agents" in capsys.readouterr().err


def test_agent_without_single_mode_says_what_to_add(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["repl", "--agent", "scripted2"]) == ExitCode.USAGE
    assert "add --agent-mode single" in capsys.readouterr().err


def test_an_unknown_agent_names_the_configured_ones(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["repl", "--agent-mode", "single", "--agent", "nobody"]
    assert cli.main(argv) == ExitCode.USAGE
    assert "configured agents: scripted1, scripted2, scripted3" in capsys.readouterr().err


def test_the_repl_without_a_terminal_on_stdin_says_how_to_pipe_a_task(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("a task"))
    assert cli.main(["repl"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "stdin is not a terminal, and the REPL needs one" in err
    assert "echo TASK | conclave" in err
