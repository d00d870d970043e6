"""Headless questions: ``--on-question`` chooses the gate, and a paused run leaves its
question in its log directory (``question.json``), with what ``conclave resume`` needs to run
it again as it ran (``paused.json``: the task, the run's flags, the working directory, and
the session and turn it was recorded in, when it was; ``paused-config.yaml``: the config
file's text as the run read it, so a resume needs neither the file nor it unchanged).

The copy is the file's text, not the loaded config: its ``${VAR}`` stay references, read
again from the environment of the resume, so no key the environment held is written to disk.
A file holding one of the run's secrets written out is not copied (the log directory holds
no secret, docs/security.md): such a run resumes from its original file."""

from __future__ import annotations

import argparse
import enum
import json
import os
import sys
from pathlib import Path
from typing import Any

import attrs

from conclave.actors.human.questions import PendingQuestion, Question, QuestionGate
from conclave.actors.human.unanswered import OnQuestion, gate_for
from conclave.actors.run.result import RunResult
from conclave.config.atomic_file import write_atomically
from conclave.config.run_secrets import run_secrets
from conclave.config.schema import ConclaveConfig
from conclave.ui.text import display_path

__all__ = [
    "CONFIG_COPY",
    "PAUSED_FILE",
    "QUESTION_FILE",
    "SessionTurn",
    "answers_line",
    "config_snapshot",
    "keep_question",
    "on_question_gate",
    "pending_json",
]

QUESTION_FILE = "question.json"
"""In a paused run's log directory: the question it waits on."""
PAUSED_FILE = "paused.json"
"""In a paused run's log directory: the task, flags and directory to resume it with."""
CONFIG_COPY = "paused-config.yaml"
"""In a paused run's log directory: the text of the config file it ran with."""
_NOT_KEPT = frozenset(
    {"handler", "command", "task", "log_dir", "output_format", "include_partial_messages"}
    | {"verbose", "continue_session", "resume"}
)
"""Flags a resumed run takes from ``conclave resume`` (or never: sessions, the log dir)."""


@attrs.frozen(kw_only=True)
class SessionTurn:
    """Which session a paused run was recorded in, and the turn it answers."""

    session: str
    turn: int


def on_question_gate(flag: str | None) -> QuestionGate | None:
    """The gate for ``--on-question``; ``None`` (no flag): agents cannot ask."""
    return None if flag is None else gate_for(OnQuestion(flag))


def pending_json(question: PendingQuestion) -> dict[str, Any]:
    return attrs.asdict(question, value_serializer=_plain)


def config_snapshot(path: Path | None, config: ConclaveConfig) -> str | None:
    """The text of the config file at ``path`` (loaded as ``config``), for a pause to keep;
    ``None`` for the scripted default (``path`` ``None``), a file that cannot be read, and one
    holding any of the run's secrets (:func:`~config.run_secrets.run_secrets`: a key, an MCP
    server's token) written out rather than as ``${VAR}``."""
    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
    secrets = run_secrets(config, os.environ).values
    return None if any(secret in text for secret in secrets) else text


def keep_question(
    result: RunResult,
    task: str,
    args: argparse.Namespace,
    turn: SessionTurn | None = None,
    config_text: str | None = None,
) -> None:
    """Write a paused run's question and how to resume it into its log directory, and say
    on stderr how to go on. ``turn``: the session and the turn the run answers, which the
    resumed run answers in its place; ``config_text``: the config file's text
    (:func:`config_snapshot`), kept beside them."""
    pending, log_dir = result.pending_question, result.log_dir
    if pending is None or log_dir is None:
        return
    flags = {
        name: value
        for name, value in vars(args).items()
        if name not in _NOT_KEPT and _is_json(value)
    }
    paused: dict[str, Any] = {"task": task, "cwd": os.getcwd(), "flags": flags}
    if turn is not None:
        paused |= {"session": turn.session, "turn": turn.turn}
    if config_text is not None:
        _write_synced(Path(log_dir) / CONFIG_COPY, config_text, text=True)
    _write_synced(Path(log_dir) / PAUSED_FILE, paused)
    _write_synced(Path(log_dir) / QUESTION_FILE, pending_json(pending))
    asked = pending.question
    lines = [
        f"conclave: paused: needs the user. {pending.agent} asks ({asked.severity.value}): "
        f"{asked.question}"
    ]
    if asked.context:
        lines.append(f"conclave:   {asked.context}")
    if answers := answers_line(asked):
        lines.append(f"conclave:   {answers}")
    value = "one of the answers, or your own words" if asked.options else "your own words"
    lines.append(
        f"conclave: go on with: conclave resume {display_path(log_dir)} --answer VALUE ({value})"
    )
    print("\n".join(lines), file=sys.stderr)


def answers_line(question: Question) -> str:
    """The answers ``question`` offers and its default, as one line: without them, the person
    would have to open ``question.json`` to learn what ``--answer`` may be."""
    shown = []
    for option in question.options:
        about = ": ".join(part for part in (option.label, option.description) if part)
        shown.append(option.value if about == option.value else f"{option.value} ({about})")
    parts = [f"answers: {', '.join(shown)}"] if shown else []
    if question.default:
        parts.append(f"default {question.default}")
    return "; ".join(parts)


def _write_synced(path: Path, data: Any, *, text: bool = False) -> None:
    """Replace ``path`` atomically with ``data`` as JSON (``text``: ``data`` is the text),
    synced to disk: a crash (a ``kill -9``, a power cut) leaves the old file or the new,
    never half of one."""
    write_atomically(path, data if text else json.dumps(data, ensure_ascii=False, indent=2))


def _is_json(value: object) -> bool:
    if isinstance(value, list | tuple):
        return all(_is_json(v) for v in value)
    return value is None or isinstance(value, str | int | float | bool)


def _plain(_instance: object, _field: object, value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value
