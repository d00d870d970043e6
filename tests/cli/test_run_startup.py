"""What `conclave run` on the openai backend does before its first request leaves (issue 24:
start-up under 0.3 s). Each spec runs the real command in a fresh interpreter whose audit hook
stops it at its first ``socket.connect``, the moment the first request would leave, and says
what was loaded (or done) by then. No server is needed: the process ends before connecting.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conclave.ui.cli import _COMMANDS, build_parser

NOT_BEFORE_THE_FIRST_REQUEST = (
    "conclave.actors.llm.scripted",
    "conclave.actors.agent.paor_round",
    "conclave.actors.paor.driver",
    "conclave.actors.paor.subagents",
    "conclave.actors.paor.events",
    "conclave.actors.paor.subagent_events",
    "conclave.actors.planning.progress",
    "conclave.actors.mcp.session",
    "conclave.actors.interactive.project",
    "conclave.actors.events.view",
    "conclave.actors.mcp.events",
    "conclave.ui.timeline",
    "conclave.ui.headless.live_status",
    "conclave.ui.headless.plan_output",
    "conclave.ui.headless.result",
    "conclave.ui.summary",
    "conclave.ui.batch.arguments",
    "conclave.ui.serve.arguments",
    "conclave.benchmarks.bench_args",
)
"""Modules a run needs only for what this one does not do (scripted agents, PAOR and its
events, executing a plan, MCP servers, other commands' options, text progress: the run
view and the timeline, which ``--output-format json`` does not show) or only once it is
over (keeping an interactive project's files, printing the result, a plan-mode run's
plan)."""

_STOP_AT_FIRST_CONNECT = """
import gc, json, os, sys
collections = []
gc.callbacks.append(
    lambda phase, info: phase == "start"
    and collections.append(any(m.startswith("conclave.runtime") for m in sys.modules))
)
def stop(event, args):
    if event == "socket.connect":
        print(json.dumps({"modules": sorted(sys.modules), "collections": collections}))
        sys.stdout.flush()
        os._exit(0)
sys.addaudithook(stop)
from conclave.ui.cli import main
main(sys.argv[1:])
print(json.dumps({"modules": None}))
"""


def _at_first_request(tmp_path: Path) -> tuple[set[str], list[bool]]:
    """When the command's first request was about to leave: the modules it had loaded, and
    for each collection so far whether any runtime module was loaded when it ran."""
    config = tmp_path / "openai.yaml"
    backend = {"type": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1", "api_key": "k"}
    agents = [{"id": f"a{i}", "backend": backend} for i in range(3)]
    config.write_text(yaml.safe_dump({"agents": agents}), encoding="utf-8")
    argv = ["run", "--config", str(config), "--output-format", "json", "Name a colour"]
    done = subprocess.run(
        [sys.executable, "-c", _STOP_AT_FIRST_CONNECT, *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[0])
    assert seen["modules"] is not None, f"the run sent no request: {done.stderr[-2000:]}"
    return set(seen["modules"]), list(seen["collections"])


def test_a_run_on_the_openai_backend_loads_only_what_it_uses_before_its_first_request(
    tmp_path: Path,
) -> None:
    loaded, _ = _at_first_request(tmp_path)

    assert sorted(loaded & set(NOT_BEFORE_THE_FIRST_REQUEST)) == []


def test_the_collector_does_not_run_while_the_runtime_loads_nor_after_until_the_first_request(
    tmp_path: Path,
) -> None:
    # Under the default thresholds it ran some fifty times over the runtime's new modules.
    _, collections = _at_first_request(tmp_path)

    assert True not in collections


@pytest.mark.parametrize("command", sorted(_COMMANDS))
def test_the_parser_built_for_a_named_command_holds_that_command_alone(command: str) -> None:
    parser = build_parser(command)

    names = [name for action in parser._actions for name in getattr(action, "choices", None) or ()]
    assert names == [command]
