"""What ``launch_run`` gives back to the interactive agent: a run's outcome as JSON.

The agent reads ``final_answer``, ``workspace_path`` and ``coordination_summary`` (winner,
votes, rounds, answer labels), and ``status``: the run's termination, or ``not_approved``
when the person cancelled it (then ``reason`` says why, and no run was made). A planning
run that was executed adds ``plan`` and ``planning_run`` (the planning run's own summary).
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

from conclave.actors.planning.plan import Plan, plan_to_dict
from conclave.actors.run.result import RunResult, Termination

__all__ = ["CoordinationSummary", "LaunchOutcome", "LaunchStatus", "RunRecord"]


class LaunchStatus(enum.Enum):
    COMPLETED = "completed"
    TIMEOUT = "timeout"
    MAX_COST = "max_cost"
    CANCELLED = "cancelled"
    """The run started and was cancelled (Ctrl+C)."""
    FAILED = "failed"
    NOT_APPROVED = "not_approved"
    """The person cancelled the run before it started: nothing ran."""


@attrs.frozen(kw_only=True)
class CoordinationSummary:
    winner: str | None
    votes: dict[str, str]
    """Voter → the answer label it voted for."""
    rounds: int
    answer_labels: tuple[str, ...]

    @classmethod
    def of(cls, result: RunResult) -> CoordinationSummary:
        return cls(
            winner=result.winner,
            votes=dict(result.votes),
            rounds=result.rounds,
            answer_labels=tuple(a.label for a in result.answers),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "winner": self.winner,
            "votes": self.votes,
            "rounds": self.rounds,
            "answer_labels": list(self.answer_labels),
        }


@attrs.frozen(kw_only=True)
class RunRecord:
    """One run a launch made: what the session links to."""

    run_id: str
    log_dir: str | None
    termination: Termination
    winner: str | None
    final_answer: str | None
    workspace_path: str | None

    @classmethod
    def of(cls, result: RunResult, run_id: str) -> RunRecord:
        return cls(
            run_id=run_id,
            log_dir=result.log_dir,
            termination=result.termination,
            winner=result.winner,
            final_answer=result.final_answer,
            workspace_path=result.workspace_path,
        )


@attrs.frozen(kw_only=True)
class LaunchOutcome:
    status: LaunchStatus
    final_answer: str | None = None
    workspace_path: str | None = None
    coordination_summary: CoordinationSummary | None = None
    run_id: str | None = None
    reason: str = ""
    """Why nothing ran (``not_approved``), or why the run failed."""
    plan: Plan | None = None
    planning: CoordinationSummary | None = None
    """The planning run's summary, when its plan was then executed."""
    runs: tuple[RunRecord, ...] = ()
    """Every run this launch made, in order (planning, then execution)."""
    deliverables: str | None = None
    """Where the project's copy of the deliverable went, if any."""

    @classmethod
    def refused(cls, reason: str) -> LaunchOutcome:
        return cls(status=LaunchStatus.NOT_APPROVED, reason=reason)

    @classmethod
    def of(cls, result: RunResult, run_id: str) -> LaunchOutcome:
        return cls(
            status=LaunchStatus(str(result.termination)),
            final_answer=result.final_answer,
            workspace_path=result.workspace_path,
            coordination_summary=CoordinationSummary.of(result),
            run_id=run_id,
            reason=result.failure_reason or "",
            runs=(RunRecord.of(result, run_id),),
        )

    def to_json(self) -> dict[str, Any]:
        """The tool result the agent reads."""
        out: dict[str, Any] = {"status": self.status.value}
        if self.status is LaunchStatus.NOT_APPROVED:
            out["reason"] = self.reason
            out["note"] = "No run was made. Carry on with the conversation."
            return out
        out["run_id"] = self.run_id
        out["final_answer"] = self.final_answer
        out["workspace_path"] = self.workspace_path
        summary = self.coordination_summary
        out["coordination_summary"] = summary.to_json() if summary is not None else None
        if self.reason:
            out["reason"] = self.reason
        if self.plan is not None:
            out["plan"] = plan_to_dict(self.plan)
        if self.planning is not None:
            out["planning_run"] = self.planning.to_json()
        if self.deliverables is not None:
            out["deliverables"] = self.deliverables
        return out
