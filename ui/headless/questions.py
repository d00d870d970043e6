"""Headless questions: ``--on-question`` chooses the gate, and a paused run leaves its
question in its log directory (``question.json``) for ``conclave resume``."""

from __future__ import annotations

import enum
import json
import os
import sys
from pathlib import Path
from typing import Any

import attrs

from conclave.actors.human.questions import PendingQuestion, QuestionGate
from conclave.actors.human.unanswered import OnQuestion, gate_for
from conclave.actors.run.result import RunResult
from conclave.ui.text import display_path

__all__ = ["QUESTION_FILE", "keep_question", "on_question_gate", "pending_json"]

QUESTION_FILE = "question.json"
"""In a paused run's log directory: the question it waits on."""


def on_question_gate(flag: str | None) -> QuestionGate | None:
    """The gate for ``--on-question``; ``None`` (no flag): agents cannot ask."""
    return None if flag is None else gate_for(OnQuestion(flag))


def pending_json(question: PendingQuestion) -> dict[str, Any]:
    return attrs.asdict(question, value_serializer=_plain)


def keep_question(result: RunResult) -> None:
    """Write a paused run's question to ``question.json`` in its log directory (replaced
    atomically, synced: a crash leaves the old file or the new, never half of one), and say
    on stderr how to go on."""
    pending, log_dir = result.pending_question, result.log_dir
    if pending is None or log_dir is None:
        return
    path = Path(log_dir) / QUESTION_FILE
    partial = path.with_suffix(".json.partial")
    with partial.open("w", encoding="utf-8") as out:
        json.dump(pending_json(pending), out, ensure_ascii=False, indent=2)
        out.flush()
        os.fsync(out.fileno())
    partial.replace(path)
    asked = pending.question
    print(
        f"conclave: paused: needs the user. {pending.agent} asks ({asked.severity.value}): "
        f"{asked.question}\n"
        f"conclave: go on with: conclave resume {display_path(log_dir)} --answer VALUE",
        file=sys.stderr,
    )


def _plain(_instance: object, _field: object, value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value
