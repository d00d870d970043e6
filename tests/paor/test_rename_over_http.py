"""The rename scenario with a model served over HTTP on loopback: an OpenAI-compatible server
scripted to plan, search, edit, run the fixture's tests and reflect, as a model would. The
agent's requests go over real sockets; the files are right afterwards.

Real sockets: no ``autojump_clock``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import conclave_process
from tests.llm.loopback import LoopbackServer, Recorded, Reply, SseReply, open_loopback_server
from tests.llm.wire import openai_reply
from tests.paor.helpers import TASK

LIMIT = 60.0


def _steps(root: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("search", {"pattern": "old_total", "path": root}),
        ("edit_file", {"path": f"{root}/util.py", "old": "def old_total",
                       "new": "def compute_total"}),
        ("edit_file", {"path": f"{root}/app.py", "old": "old_total", "new": "compute_total",
                       "replace_all": True}),
        ("run_shell", {"command": f"cd {root} && python3 test_app.py"}),
    ]  # fmt: skip


def _model(root: Path) -> Callable[[Recorded], Reply]:
    """A model that plans the four steps, makes them one per call, then reflects."""
    steps = _steps(str(root))

    def reply(request: Recorded) -> Reply:
        body = request.json
        offered = [t["function"]["name"] for t in body.get("tools") or []]
        done = [
            m for m in body["messages"] if m["role"] == "tool" and m["tool_call_id"][:4] == "step"
        ]
        call: tuple[str, str, dict[str, Any]] | None
        if offered == ["submit_plan"]:
            plan = [
                {"id": str(n), "action": name, "tools": [name]}
                for n, (name, _) in enumerate(steps, 1)
            ]
            call = ("submit_plan", "plan_1", {"goal": "rename old_total", "steps": plan})
        elif offered == ["reflect"]:
            passed = "ok" in done[-1]["content"]
            progress = "renamed old_total to compute_total in util.py and app.py; tests pass"
            call = ("reflect", "reflect_1", {"goal_achieved": passed, "progress": progress})
        elif len(done) < len(steps):
            name, arguments = steps[len(done)]
            call = (name, f"step{len(done)}", arguments)
        else:
            call = None
        calls = () if call is None else ((call[0], call[1], [json.dumps(call[2])]),)
        text = "Renamed and tested." if call is None else ""
        return SseReply(parts=tuple(openai_reply(text, tool_calls=calls)))

    return reply


# fmt: on


@pytest.fixture
async def server(repo: Path) -> AsyncIterator[LoopbackServer]:
    async with open_loopback_server() as running:
        running.handler = _model(repo)
        yield running


async def test_the_rename_runs_end_to_end_against_a_model_over_http(
    server: LoopbackServer,
    repo: Path,
    tmp_path: Path,
) -> None:
    backend = {"type": "openai", "model": "paor-model", "base_url": f"{server.url}/v1",
               "api_key": "sk-test", "max_retries": 0}  # fmt: skip
    config = tmp_path / "http.yaml"
    config.write_text(yaml.safe_dump({
        "agents": [{"id": "http", "loop": "paor", "backend": backend}],
        "orchestrator": {"quiet_period": None},
    }))  # fmt: skip
    done = await conclave_process(
        "run", "--config", str(config), "--agent-mode", "single", "--refinement", "off",
        "--context", f"{repo}:w", "--output-format", "json", TASK,
        cwd=tmp_path, limit=LIMIT)  # fmt: skip
    assert done.returncode == ExitCode.OK, done.stderr.decode()
    result = json.loads(done.stdout)
    assert result["final_answer"].startswith("Done: renamed old_total to compute_total")
    assert "def compute_total" in (repo / "util.py").read_text()
    assert "old_total" not in (repo / "app.py").read_text()
    phases = [r for r in server.requests if r.json.get("tools")]
    assert len(phases) == 7  # plan, four steps, the note, the reflection


def _asks_first(root: Path) -> Callable[[Recorded], Reply]:
    """The model of the scenario, whose first reflection needs the user."""
    plays = _model(root)

    def reply(request: Recorded) -> Reply:
        body = request.json
        offered = [t["function"]["name"] for t in body.get("tools") or []]
        answered = any("The user answered" in str(m.get("content")) for m in body["messages"])
        if offered == ["reflect"] and not answered:
            question = {"goal_achieved": False, "progress": "edited; tests run",
                        "needs_user": "Rename the test helpers too?"}  # fmt: skip
            parts = openai_reply(tool_calls=(("reflect", "reflect_1", [json.dumps(question)]),))
            return SseReply(parts=tuple(parts))
        return plays(request)

    return reply


async def test_a_reflection_that_needs_the_user_pauses_a_headless_run_with_exit_4(
    server: LoopbackServer, repo: Path, tmp_path: Path
) -> None:
    server.handler = _asks_first(repo)
    backend = {"type": "openai", "model": "paor-model", "base_url": f"{server.url}/v1",
               "api_key": "sk-test", "max_retries": 0}  # fmt: skip
    config = tmp_path / "http.yaml"
    config.write_text(yaml.safe_dump({
        "agents": [{"id": "http", "loop": "paor", "backend": backend}],
        "orchestrator": {"quiet_period": None},
    }))  # fmt: skip
    done = await conclave_process(
        "run", "--config", str(config), "--agent-mode", "single", "--refinement", "off",
        "--context", f"{repo}:w", "--on-question", "pause", "--output-format", "json",
        "--log-dir", str(tmp_path / "paused"), TASK,
        cwd=tmp_path, limit=LIMIT)  # fmt: skip
    assert done.returncode == ExitCode.PAUSED, done.stderr.decode()
    result = json.loads(done.stdout)
    assert result["termination"] == "paused"
    assert result["pending_question"]["question"]["question"] == "Rename the test helpers too?"
    resumed = await conclave_process(
        "resume", str(tmp_path / "paused"), "--answer", "no, only old_total",
        "--output-format", "json", cwd=tmp_path, limit=LIMIT)  # fmt: skip
    assert resumed.returncode == ExitCode.OK, resumed.stderr.decode()
    assert json.loads(resumed.stdout)["final_answer"].startswith("Done: renamed old_total")
