"""Headless sessions: ``conclave run`` records each turn; ``--continue``/``--resume`` add a
turn to a session whose history the agents see; ``conclave sessions`` lists them; the
config's ``mode:`` sets the starting mode."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import pytest

from conclave.actors.session.entries import ModeChanged, PlanProposed, RunRecorded, UserTurn
from conclave.actors.session.store import read_session
from conclave.config.modes import ModeSource
from conclave.config.schema.modes import CollaborationMode
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import write_config

SESSIONS = Path(".conclave") / "sessions"


def _sessions() -> list[Path]:
    return sorted(SESSIONS.glob("*/session.jsonl"))


def _session_id(err: str) -> str:
    found = re.search(r"session (\S+) \(go on with", err)
    assert found is not None, err
    return found.group(1)


def test_a_run_records_its_turn_and_run_in_a_new_session(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--config", str(fast_config), "first task"]) == ExitCode.OK
    [path] = _sessions()
    entries = read_session(path).entries
    [turn] = [e for e in entries if isinstance(e, UserTurn)]
    [run] = [e for e in entries if isinstance(e, RunRecorded)]
    assert turn.text == "first task" and run.turn_id == turn.id
    assert run.final_answer is not None and run.input_tokens and run.input_tokens > 0
    assert path.parent.name == _session_id(capsys.readouterr().err)


def test_continue_adds_a_turn_whose_agents_see_the_earlier_one(fast_config: Path) -> None:
    main(["run", "--config", str(fast_config), "first task about paperclips"])
    assert main(["run", "--config", str(fast_config), "-c", "second task"]) == ExitCode.OK
    [path] = _sessions()
    entries = read_session(path).entries
    assert [e.text for e in entries if isinstance(e, UserTurn)] == [
        "first task about paperclips",
        "second task",
    ]
    second = [e for e in entries if isinstance(e, RunRecorded)][-1]
    assert second.log_dir is not None
    transcripts = (Path(second.log_dir) / "transcripts.jsonl").read_text()
    assert "first task about paperclips" in transcripts


def test_resume_by_id_adds_the_turn_to_that_session(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["run", "--config", str(fast_config), "to be resumed"])
    wanted = _session_id(capsys.readouterr().err)
    main(["run", "--config", str(fast_config), "another session"])
    assert main(["run", "--config", str(fast_config), "--resume", wanted, "later"]) == 0
    texts = [
        e.text
        for e in read_session(SESSIONS / wanted / "session.jsonl").entries
        if isinstance(e, UserTurn)
    ]
    assert texts == ["to be resumed", "later"]


def test_continue_without_a_session_is_a_usage_error_saying_what_to_do(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--config", str(fast_config), "-c", "task"]) == ExitCode.USAGE
    assert "no session yet; start one without --continue" in capsys.readouterr().err
    assert _sessions() == []


def test_continue_without_a_session_and_an_empty_stdin_is_the_usage_error(
    fast_config: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # `conclave -c </dev/null`
    assert main(["run", "--config", str(fast_config), "-c"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "no session yet; start one without --continue" in err
    assert "stdin was empty" not in err


def test_an_unknown_resume_id_is_a_usage_error_naming_the_list_command(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--config", str(fast_config), "--resume", "nope", "t"]) == ExitCode.USAGE
    assert "conclave sessions" in capsys.readouterr().err


def test_continue_and_resume_together_are_refused(fast_config: Path) -> None:
    assert main(["run", "--config", str(fast_config), "-c", "--resume", "x", "t"]) == 2


def test_the_configs_mode_sets_the_runs_mode_and_is_recorded_as_the_configs(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path / "plan.yaml", [{"id": "a", "latency": 0}])
    config.write_text(config.read_text() + "mode: plan\n")
    main(["run", "--config", str(config), "plan something"])
    [path] = _sessions()
    [change] = [e for e in read_session(path).entries if isinstance(e, ModeChanged)]
    assert change.collaboration is CollaborationMode.PLAN
    assert change.source is ModeSource.CONFIG


def test_the_mode_flag_wins_over_the_configs_mode(tmp_path: Path) -> None:
    config = write_config(tmp_path / "plan.yaml", [{"id": "a", "latency": 0}])
    config.write_text(config.read_text() + "mode: plan\n")
    main(["run", "--config", str(config), "--mode", "execute", "do it"])
    [path] = _sessions()
    [change] = [e for e in read_session(path).entries if isinstance(e, ModeChanged)]
    assert change.collaboration is CollaborationMode.EXECUTE
    assert change.source is ModeSource.FLAG


def test_sessions_lists_this_directorys_sessions_as_json(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["run", "--config", str(fast_config), "listed task"])
    capsys.readouterr()
    assert main(["sessions", "--json"]) == ExitCode.OK
    [listed] = json.loads(capsys.readouterr().out)
    assert listed["first_prompt"] == "listed task"
    assert listed["turns"] == 1 and listed["runs"] == 1 and listed["problem"] is None


def test_sessions_as_text_shows_id_age_turns_and_first_prompt(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["run", "--config", str(fast_config), "a text-listed task"])
    wanted = _session_id(capsys.readouterr().err)
    main(["sessions"])
    out = capsys.readouterr().out
    header, row = out.splitlines()[:2]
    assert header.split() == ["ID", "LAST", "USED", "TURNS", "FIRST", "PROMPT"]
    assert row.startswith(wanted) and "just now" in row and row.endswith("a text-listed task")


def test_no_sessions_says_how_to_start_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sessions"]) == ExitCode.OK
    assert "no sessions in this directory yet" in capsys.readouterr().err


def test_an_unwritable_directory_runs_the_turn_without_a_session(
    fast_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".conclave").mkdir()
    (tmp_path / ".conclave" / "sessions").write_text("not a directory")
    assert main(["run", "--config", str(fast_config), "task"]) == ExitCode.OK
    assert "not saved as a session" in capsys.readouterr().err


def test_a_run_prunes_sessions_past_the_configs_retention(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path / "keep.yaml", [{"id": "a", "latency": 0}])
    config.write_text(config.read_text() + "sessions:\n  retention_days: 7\n")
    main(["run", "--config", str(config), "an old task"])
    [old] = _sessions()
    eight_days_ago = old.stat().st_mtime - 8 * 86_400
    os.utime(old, (eight_days_ago, eight_days_ago))
    main(["run", "--config", str(config), "a new task"])
    [kept] = _sessions()
    assert kept != old and not old.exists()


def test_a_plan_mode_runs_plan_is_the_sessions_next_plan_version(tmp_path: Path) -> None:
    config = write_config(tmp_path / "plan.yaml", [{"id": "a", "latency": 0}])
    main(["run", "--config", str(config), "--mode", "plan", "plan a party"])
    main(["run", "--config", str(config), "--mode", "plan", "-c", "plan it again"])
    [path] = _sessions()
    plans = [e for e in read_session(path).entries if isinstance(e, PlanProposed)]
    assert [p.version for p in plans] == [1, 2]
    assert json.loads(plans[0].plan)["steps"]


def _last_mode(path: Path) -> ModeChanged:
    return [e for e in read_session(path).entries if isinstance(e, ModeChanged)][-1]


def test_continue_runs_in_the_modes_the_session_left_off_in(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path / "plan.yaml", [{"id": "a", "latency": 0}])
    main(["run", "--config", str(config), "--mode", "plan", "--refinement", "off", "plan it"])
    capsys.readouterr()
    assert main(["run", "--config", str(config), "-c", "and again"]) == ExitCode.OK
    [path] = _sessions()
    entries = read_session(path).entries
    assert len([e for e in entries if isinstance(e, ModeChanged)]) == 1  # nothing changed it
    assert len([e for e in entries if isinstance(e, PlanProposed)]) == 2  # both turns planned
    assert "restored plan mode, multi-agent, refinement off" in capsys.readouterr().err


def test_a_flag_given_with_continue_wins_over_that_one_restored_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path / "plan.yaml", [{"id": "a", "latency": 0}])
    main(["run", "--config", str(config), "--mode", "plan", "--refinement", "off", "plan it"])
    capsys.readouterr()
    main(["run", "--config", str(config), "-c", "--mode", "default", "now do it"])
    [path] = _sessions()
    change = _last_mode(path)
    assert change.collaboration is CollaborationMode.DEFAULT and change.refinement is False
    assert change.source is ModeSource.FLAG
    assert "refinement off; now default mode, multi-agent, refinement off" in (
        capsys.readouterr().err
    )


def test_continue_drops_a_restored_agent_the_config_no_longer_has(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agents = [{"id": "a", "latency": 0}, {"id": "b", "latency": 0}]
    config = write_config(tmp_path / "two.yaml", agents)
    main(["run", "--config", str(config), "--agent-mode", "single", "--agent", "b", "one"])
    write_config(tmp_path / "two.yaml", agents[:1])
    capsys.readouterr()
    assert main(["run", "--config", str(config), "-c", "two"]) == ExitCode.OK
    assert "agent 'b' is no longer configured: multi-agent mode" in capsys.readouterr().err
    [path] = _sessions()
    assert _last_mode(path).active_agent is None


def test_continuing_a_session_cut_off_mid_line_reports_the_line_and_goes_on(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["run", "--config", str(fast_config), "before the crash"])
    [path] = _sessions()
    with path.open("ab") as file:
        file.write(b'{"kind":"session_user_turn","id":9,"at":1.0,"te')  # power lost mid-write
    capsys.readouterr()
    assert main(["run", "--config", str(fast_config), "-c", "after the crash"]) == ExitCode.OK
    assert "was cut off (an interrupted write) and is skipped" in capsys.readouterr().err
    log = read_session(path)
    assert [e.text for e in log.entries if isinstance(e, UserTurn)] == [
        "before the crash",
        "after the crash",
    ]
