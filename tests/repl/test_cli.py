"""``conclave repl``, a bare ``conclave`` in a terminal, and ``conclave`` with only run flags
in a terminal: the flags and the config, resolved and checked before the terminal is taken
over."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import attrs
import pytest

from conclave.config.modes import AgentMode, CollaborationMode, ModeState
from conclave.config.resolver import ResolvedConfig, RunFlags
from conclave.ui import cli
from conclave.ui.exit_codes import ExitCode


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No developer's ``./.conclave/config.yaml`` or user config: the REPL finds them now."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


@attrs.frozen(kw_only=True)
class _Start:
    resolved: ResolvedConfig
    modes: ModeState
    welcome: str


def _opened(monkeypatch: pytest.MonkeyPatch) -> list[_Start]:
    """Record what the REPL would open with (its config and modes), instead of opening it
    on a terminal the test does not have."""
    opened: list[_Start] = []

    def run_repl(resolved: ResolvedConfig, *, modes: ModeState, welcome: str, **_: object) -> int:
        opened.append(_Start(resolved=resolved, modes=modes, welcome=welcome))
        return ExitCode.OK

    monkeypatch.setattr("conclave.ui.repl.app.run_repl", run_repl)
    monkeypatch.setattr("sys.stdin", _Terminal())
    return opened


def _agent_ids(start: _Start) -> list[str]:
    return [agent.id for agent in start.resolved.base.agents]


def _write_config(path: Path, *ids: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    agents = ", ".join(f"{{id: {i}, backend: {{latency: 0}}}}" for i in ids)
    path.write_text(f"agents: [{agents}]\n", encoding="utf-8")
    return path


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
    # No mode flag given (None): a resumed session's modes, the config's mode:, else the
    # default modes decide.
    assert (args.mode, args.agent_mode, args.refinement) == (None, None, None)
    assert RunFlags.from_args(args).mode_state() == ModeState()


def test_conclave_repl_takes_the_starting_modes(monkeypatch: pytest.MonkeyPatch) -> None:
    started = _started(monkeypatch)
    argv = ["repl", "--mode", "plan", "--agent-mode", "single", "--refinement", "off"]
    assert cli.main(argv) == ExitCode.OK
    [args] = started
    assert (args.mode, args.agent_mode, args.refinement) == ("plan", "single", "off")


def test_dash_m_is_short_for_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    started = _started(monkeypatch)
    assert cli.main(["repl", "-m", "plan"]) == ExitCode.OK
    [args] = started
    assert args.mode == "plan"


def test_a_bare_conclave_with_dash_m_starts_the_repl_in_that_mode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started = _started(monkeypatch)
    monkeypatch.setattr("sys.stdin", _Terminal())
    assert cli.main(["-m", "execute"]) == ExitCode.OK
    [args] = started
    assert args.mode == "execute"


@pytest.mark.parametrize("command", ["run", "batch"])
def test_every_command_with_mode_takes_dash_m_for_it(command: str) -> None:
    parser = cli.build_parser()
    parsed = parser.parse_args([command, "-m", "plan", "x"])
    assert parsed.mode == "plan"


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


def test_the_repl_uses_this_directorys_conclave_config_yaml(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = _write_config(Path.cwd() / ".conclave" / "config.yaml", "from-project", "second")
    opened = _opened(monkeypatch)

    assert cli.main([]) == ExitCode.OK

    [start] = opened
    assert _agent_ids(start) == ["from-project", "second"]
    assert f"config {project} (this directory's .conclave/config.yaml)" in start.welcome


def test_conclave_with_only_a_config_flag_on_a_terminal_opens_the_repl_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _write_config(tmp_path / "x.yaml", "given-1", "given-2")
    opened = _opened(monkeypatch)

    assert cli.main(["--config", str(config)]) == ExitCode.OK

    [start] = opened
    assert _agent_ids(start) == ["given-1", "given-2"]


def test_conclave_with_only_agents_on_a_terminal_opens_the_repl_with_that_many(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    opened = _opened(monkeypatch)

    assert cli.main(["--agents", "200", "--visibility", "ring"]) == ExitCode.OK

    [start] = opened
    assert len(_agent_ids(start)) == 200
    assert start.resolved.base.orchestrator.visibility == "ring"


def test_conclave_with_only_modes_on_a_terminal_opens_the_repl_in_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    opened = _opened(monkeypatch)

    argv = ["--mode", "plan", "--agent-mode", "single", "--agent", "scripted2"]
    assert cli.main(argv) == ExitCode.OK

    [start] = opened
    assert start.modes.collaboration is CollaborationMode.PLAN
    assert (start.modes.agent_mode, start.modes.active_agent) == (AgentMode.SINGLE, "scripted2")


def test_run_flags_without_a_terminal_or_a_task_on_stdin_still_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _write_config(tmp_path / "x.yaml", "given-1")
    monkeypatch.setattr("sys.stdin", None)

    assert cli.main(["--config", str(config)]) == ExitCode.USAGE
    assert "no task given: pass TASK, use -p TASK, or pipe it on stdin" in capsys.readouterr().err


def test_a_flag_only_a_headless_run_takes_is_still_a_run_without_a_task(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    opened = _opened(monkeypatch)

    assert cli.main(["--output-format", "json"]) == ExitCode.USAGE

    assert opened == []
    assert "no task given" in capsys.readouterr().err


def test_a_task_on_a_terminal_is_still_a_run(monkeypatch: pytest.MonkeyPatch) -> None:
    opened = _opened(monkeypatch)
    ran: list[argparse.Namespace] = []

    def run_command(args: argparse.Namespace) -> int:
        ran.append(args)
        return ExitCode.OK

    monkeypatch.setattr("conclave.ui.headless.command.run_command", run_command)

    assert cli.main(["--agents", "2", "Name three uses of a paperclip"]) == ExitCode.OK

    assert opened == []
    [args] = ran
    assert (args.task, args.agents) == ("Name three uses of a paperclip", 2)


def test_the_repl_checks_its_starting_modes_not_every_mode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """300 agents are too many for multi mode's all-to-all visibility, and fine for single
    mode, which runs one of them: the REPL opens in single mode (a turn in multi mode is
    refused when it starts: test_turn_config.py)."""
    opened = _opened(monkeypatch)

    assert cli.main(["repl", "--agents", "300", "--agent-mode", "single"]) == ExitCode.OK

    [start] = opened
    assert len(_agent_ids(start)) == 300


def test_a_log_dir_whose_name_is_too_long_is_refused_before_the_repl_starts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    opened = _opened(monkeypatch)

    assert cli.main(["repl", "--log-dir", "a" * 300]) == ExitCode.USAGE

    assert opened == []
    assert capsys.readouterr().err == (
        f"conclave: --log-dir {'a' * 300}: cannot use it (File name too long); "
        "pass a writable directory\n"
    )


def test_a_log_dir_the_repl_could_not_create_is_refused_before_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    opened = _opened(monkeypatch)
    (tmp_path / "file").write_text("")

    assert cli.main(["repl", "--log-dir", str(tmp_path / "file" / "runs")]) == ExitCode.USAGE

    assert opened == []
    assert "cannot create it (Not a directory); pass a writable directory" in (
        capsys.readouterr().err
    )
