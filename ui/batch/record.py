"""A result line: the run's JSON with where it came from (provenance) and its grade.

Provenance is what a reader needs to trust and reproduce a number without the batch's
command line: the task and its metadata, the expected answer, the config's name and hash,
each agent's model, the Conclave version, when it started, and (from the run) its duration,
usage, cost and termination.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

import attrs

from conclave.actors.batch.version import installed_version
from conclave.actors.batch.work import JobOutcome
from conclave.config.schema import ConclaveConfig
from conclave.ui.batch.extract import Extractor, extract
from conclave.ui.batch.grading import Grade, GradeError, Grader, is_correct
from conclave.ui.batch.judge import verdict
from conclave.ui.batch.tasks import TaskLine

__all__ = ["GradeOutcome", "grade_answer", "models_of", "result_record"]


def models_of(config: ConclaveConfig) -> dict[str, str]:
    """Agent id → its model (``scripted`` for the scripted backend)."""
    return {
        agent.id: str(getattr(agent.backend, "model", None) or agent.backend.type)
        for agent in config.agents
    }


@attrs.frozen(kw_only=True)
class GradeOutcome:
    correct: bool | None
    """``None``: not graded (no grader, no ``expected``), or the grader could not say."""
    extracted: str | None = None
    """The graded part of the answer, when an extraction was asked for."""
    error: str | None = None
    """Why a grader could not say."""


def grade_answer(
    grader: Grader | None,
    extractor: Extractor | None,
    answer: str | None,
    expected: Any,
    tolerance: float,
    judge: Mapping[str, Any] | None = None,
) -> GradeOutcome:
    """The grade of ``answer``; a model grade reads the ``judge``'s run."""
    if grader is None:
        return GradeOutcome(correct=None)
    graded = answer if extractor is None else extract(extractor, answer)
    extracted = None if extractor is None else graded
    if grader.method is Grade.MODEL:
        if answer is None:
            return GradeOutcome(correct=False, extracted=extracted)
        said = verdict(None if judge is None else judge.get("final_answer"))
        error = None if said is not None else "the judge gave no VERDICT line"
        return GradeOutcome(correct=said, extracted=extracted, error=error)
    if expected is None:
        return GradeOutcome(correct=None, extracted=extracted)
    try:
        return GradeOutcome(
            correct=is_correct(grader, graded, expected, tolerance), extracted=extracted
        )
    except GradeError as exc:
        return GradeOutcome(correct=None, extracted=extracted, error=str(exc))


def result_record(
    *,
    line: TaskLine,
    variant: str,
    epoch: int,
    mode: str,
    config_name: str,
    config: ConclaveConfig,
    config_hash: str,
    outcome: JobOutcome,
    grader: Grader | None,
    extractor: Extractor | None,
    tolerance: float,
) -> dict[str, Any]:
    """The line RESULTS gets for a finished run (docs/batch.md lists the fields)."""
    result = outcome.result
    started = datetime.datetime.fromtimestamp(outcome.started, tz=datetime.UTC)
    graded = grade_answer(
        grader, extractor, result["final_answer"], line.expected, tolerance, outcome.judge
    )
    record: dict[str, Any] = {
        "id": line.id,
        "variant": variant,
        "epoch": epoch,
        "mode": mode,
        "config_name": config_name,
        "config_hash": config_hash,
        "line": line.line,
        "task": line.task,
        "metadata": dict(line.metadata),
        "expected": line.expected,
        "history": [{"task": t.task, "answer": t.final_answer} for t in line.history],
        "models": models_of(config),
        "conclave_version": installed_version(),
        "started_at": started.isoformat(timespec="microseconds"),
        **result,
        "node": outcome.node,
        "attempts": outcome.attempts,
        "grader": None if grader is None else grader.spec,
        "extract": None if extractor is None else extractor.spec,
        "extracted_answer": graded.extracted,
        "correct": graded.correct,
        "grade_error": graded.error,
    }
    if outcome.judge is not None:
        judge = outcome.judge
        record["judge"] = {
            key: judge.get(key)
            for key in ("final_answer", "termination", "input_tokens", "output_tokens", "cost_usd")
        }
        record["grade_cost_usd"] = judge.get("cost_usd")
    return record
