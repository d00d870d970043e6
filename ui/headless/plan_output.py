"""``conclave run --mode plan``: the run's answer read as a plan and saved under its log dir.

The plan is saved as ``plans/plan-v1.json`` next to ``events.jsonl``; text output shows it
rendered, JSON output adds it as the ``plan`` field (docs/exit-codes.md). An answer that is
not a plan is shown as it is, with ``plan`` null: planning models do not always comply.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import attrs

from conclave.actors.planning.flow import PlanStore
from conclave.actors.planning.plan import Plan, parse_plan, plan_to_dict
from conclave.actors.run.result import RunResult
from conclave.ui.text import display_path

__all__ = ["PlannedResult", "plan_of"]


@attrs.frozen(kw_only=True)
class PlannedResult:
    """What a plan-mode run adds to its output."""

    plan: Plan | None
    path: Path | None
    """Where the plan was saved; ``None`` when there is none, or it could not be saved."""

    def fields(self) -> dict[str, Any]:
        """The JSON result's plan-mode fields."""
        return {
            "plan": plan_to_dict(self.plan) if self.plan is not None else None,
            "plan_path": str(self.path) if self.path is not None else None,
        }


def plan_of(result: RunResult) -> PlannedResult:
    """The plan in the run's final answer, saved under its log dir. A failure to save (a
    full disk) is one line on stderr: the plan is still printed."""
    plan = parse_plan(result.final_answer) if result.final_answer is not None else None
    if plan is None:
        if result.final_answer is not None:
            print("conclave: the answer is not a plan; showing it as text", file=sys.stderr)
        return PlannedResult(plan=None, path=None)
    if result.log_dir is None:
        return PlannedResult(plan=plan, path=None)
    try:
        path = PlanStore(Path(result.log_dir)).save(plan)
    except OSError as exc:
        print(
            f"conclave: cannot save the plan under {display_path(result.log_dir)} "
            f"({exc.strerror or exc}); it is printed below only",
            file=sys.stderr,
        )
        return PlannedResult(plan=plan, path=None)
    print(f"conclave: plan saved to {display_path(path)}", file=sys.stderr)
    return PlannedResult(plan=plan, path=path)
