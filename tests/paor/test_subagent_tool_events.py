"""A sub-agent's tool calls are recorded under its path (``paor/1.look``), not its parent's
name: the event log, ``conclave replay`` and the timeline tell them apart, and the parent's
row counts them without showing them as its own running tool."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

from conclave.actors.events.loop import ToolCallStarted
from conclave.actors.events.view import RunView
from conclave.actors.paor.plan import SubAgentKind
from conclave.actors.paor.subagent_events import SubAgentStarted
from conclave.runtime.eventlog import read_event_log
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from tests.paor.test_delegation_scenario import _delegating
from tests.paor.test_rename_scenario import _run


def _log(tmp_path: Path, repo: Path) -> Path:
    code, _out, err = _run(tmp_path, _delegating(tmp_path, repo), repo)
    assert code == ExitCode.OK, err
    [log] = (tmp_path / "log0").rglob("events.jsonl")
    return log


def _tool_calls(log: Path) -> list[tuple[str, str]]:
    events: list[dict[str, Any]] = [json.loads(line) for line in log.read_text().splitlines()]
    return [(e["agent"], e["tool"]) for e in events if e["kind"] == "tool_call_started"]


def test_the_sub_agents_calls_are_recorded_under_its_path(tmp_path: Path, repo: Path) -> None:
    calls = _tool_calls(_log(tmp_path, repo))

    assert [c for c in calls if c[0] == "paor/1.look"] == [
        ("paor/1.look", "read_file"),
        ("paor/1.look", "search"),
    ]
    assert [tool for agent, tool in calls if agent == "paor"] == [
        "search",
        "edit_file",
        "edit_file",
        "run_shell",
    ]


def test_replay_names_the_sub_agent_on_its_calls(tmp_path: Path, repo: Path) -> None:
    log = _log(tmp_path, repo)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["replay", str(log)]) == ExitCode.OK

    assert "paor/1.look [tool:read_file] running…" in out.getvalue()
    assert "paor [tool:edit_file] running…" in out.getvalue()


def test_the_parents_row_counts_its_sub_agents_calls(tmp_path: Path, repo: Path) -> None:
    view = RunView.from_events(read_event_log(_log(tmp_path, repo)).events)

    assert list(view.agents) == ["paor"]
    assert view.agents["paor"].tool_calls == 6


def test_a_sub_agents_running_call_is_not_shown_as_its_parents_tool() -> None:
    started = SubAgentStarted(
        at=0.0,
        agent="w1",
        subagent="w1/1.look",
        agent_kind=SubAgentKind.EXPLORE,
        step="look",
        task="look",
        tokens=None,
        seconds=None,
    )
    call = ToolCallStarted(at=0.1, agent="w1/1.look", tool="search", call_id="c", arguments="{}")

    view = RunView.from_events([started, call])

    assert view.agents["w1"].tool is None
    assert "w1/1.look" not in view.agents
