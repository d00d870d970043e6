"""Running ``conclave`` for the CLI specs: in-process through ``ui.cli.main`` where that is
enough, as a real subprocess of the installed console script where stdin, signals or the
process exit matter. Configs are temp YAML files with zero latency, so runs take
milliseconds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

CONCLAVE = Path(sys.executable).with_name("conclave")
TASK = "Name three uses of a paperclip"
REQUIRED_KEYS = {
    "final_answer",
    "winner",
    "presenter",
    "strategy",
    "answers",
    "votes",
    "rounds",
    "llm_calls",
    "restarts",
    "termination",
    "failed_agents",
    "log_dir",
    "duration_s",
}


def write_config(path: Path, agents: list[dict[str, Any]], **orchestrator: Any) -> Path:
    """A YAML config; agents are ``{"id": ..., **backend fields}``."""
    data: dict[str, Any] = {
        "agents": [
            {"id": a["id"], "backend": {k: v for k, v in a.items() if k != "id"}} for a in agents
        ],
        "orchestrator": {"quiet_period": None, **orchestrator},
    }
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def fast_agents(n: int = 3) -> list[dict[str, Any]]:
    return [{"id": f"agent-{i}", "seed": i, "latency": 0} for i in range(1, n + 1)]


def conclave(
    *args: str, cwd: Path, stdin: str | None = None, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    """Run the installed ``conclave`` command to its end."""
    return subprocess.run(
        [str(CONCLAVE), *args],
        cwd=cwd,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def parse_json(stdout: str) -> dict[str, Any]:
    data = json.loads(stdout)
    assert isinstance(data, dict)
    return data
