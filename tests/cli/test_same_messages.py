"""The same bad flag or config gets the same message and exit code from ``conclave run``,
``conclave batch``, ``conclave serve`` and the REPL: all four resolve through the one
resolver (config/resolver.py), so no front end has a copy of a check or of its words.

Each front end is run through the real CLI; where it would start (the REPL on a terminal,
the server listening), it records that it started instead, so a front end that accepted what
the others refuse shows up as a different outcome rather than a hang."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import TASK, fast_agents, write_config

FrontEnd = Callable[[list[str], Path], list[str]]

FRONT_ENDS: dict[str, FrontEnd] = {
    "run": lambda flags, _: ["run", *flags, TASK],
    "batch": lambda flags, tasks: ["batch", str(tasks), "--dry-run", *flags],
    "serve": lambda flags, _: ["serve", "--port", "0", *flags],
    "repl": lambda flags, _: ["repl", *flags],
}
_PREFIX = re.compile(r"^conclave(?: [a-z]+)?: ")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _started_instead(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The REPL and the server, accepting their flags, return at once (exit 0)."""

    async def serve(*_: object) -> None:
        return None

    monkeypatch.setattr("conclave.ui.serve.command._serve", serve)
    monkeypatch.setattr("conclave.ui.repl.app.run_repl", lambda *_, **__: ExitCode.OK)
    monkeypatch.setattr("sys.stdin", _Terminal())
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


def _error(err: str) -> str:
    """The message a front end ended with: from its last line that starts ``conclave...:``
    (after the prefix, which names the command) to the end."""
    lines = err.splitlines()
    starts = [i for i, line in enumerate(lines) if _PREFIX.match(line)]
    if not starts:
        return err
    return "\n".join([_PREFIX.sub("", lines[starts[-1]]), *lines[starts[-1] + 1 :]])


def _keyless(path: Path) -> Path:
    backend = {"type": "openai", "model": "gpt-4o-mini", "api_key_env": "CONCLAVE_NO_SUCH_KEY"}
    agents = [{"id": f"remote-{i}", "backend": backend} for i in (1, 2)]
    path.write_text(yaml.safe_dump({"agents": agents}), encoding="utf-8")
    return path


CASES: dict[str, tuple[Callable[[Path], list[str]], str, tuple[str, ...]]] = {
    "config-and-agents": (
        lambda d: ["--config", str(write_config(d / "c.yaml", fast_agents(2))), "--agents", "2"],
        "--agents applies only to the default scripted agents; drop it or --config",
        tuple(FRONT_ENDS),
    ),
    "a-bad-field": (
        lambda d: [
            "--config",
            str(write_config(d / "c.yaml", fast_agents(2), final_answer_strategy="best")),
        ],
        "orchestrator.final_answer_strategy:",
        tuple(FRONT_ENDS),
    ),
    "no-agent-has-a-key": (
        lambda d: ["--config", str(_keyless(d / "c.yaml"))],
        "no API key for 2 agents (remote-1, remote-2)",
        tuple(FRONT_ENDS),
    ),
    "model-without-a-model": (
        lambda d: ["--model", "gpt-4o"],
        "--model: no agent in this config talks to a model",
        tuple(FRONT_ENDS),
    ),
    "context-permission": (
        lambda d: ["--context", f"{d}:rw"],
        "':rw' is not a permission",
        tuple(FRONT_ENDS),
    ),
    "too-many-to-see-each-other": (
        lambda d: ["--agents", "300"],
        "visibility 'all' with 300 agents is all-to-all",
        tuple(FRONT_ENDS),
    ),
    "an-unknown-agent": (
        lambda d: ["--agents", "3", "--agent-mode", "single", "--agent", "nobody"],
        "--agent: active agent 'nobody' is not configured; "
        "configured agents: scripted1, scripted2, scripted3",
        ("run", "batch", "repl"),  # a serve client names the agent in its start_run
    ),
    "a-bad-agents-value": (
        lambda d: ["--agents", "0"],
        "error: argument --agents: expected a whole number >= 1 and <= 100,000, got 0",
        tuple(FRONT_ENDS),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_front_end_refuses_it_with_the_same_message_and_exit_2(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags_of, expected, front_ends = CASES[case]
    flags = flags_of(tmp_path)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "t1", "task": "x"}\n', encoding="utf-8")

    outcomes = {}
    for name in front_ends:
        code = main(FRONT_ENDS[name](flags, tasks))
        outcomes[name] = (code, _error(capsys.readouterr().err))

    first = outcomes[front_ends[0]]
    assert outcomes == dict.fromkeys(front_ends, first)
    code, message = first
    assert code == ExitCode.USAGE
    assert expected in message
