"""A plan's progress while it executes: the ``update_plan`` tool and the events it records.

A run whose task executes an approved plan (:func:`actors.planning.flow.execution_task`)
keeps one :class:`PlanProgress`: it records :class:`PlanExecutionStarted` (every step,
pending) as the run starts, and each agent's ``update_plan`` call marks a step pending, in
progress or done and records :class:`PlanStepUpdated` with every step's status after the
change, so a reader (the REPL's live step list) shows the latest event as it is and derives
nothing. Statuses are the run's, not one agent's: the last agent to mark a step decides it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import trio

from conclave.actors.events.base import DomainEvent
from conclave.actors.planning.plan import Plan
from conclave.actors.tools.protocol import ToolResult
from conclave.actors.tools.spec import ToolContext, ToolError, ToolSpec
from conclave.runtime import Event, message

__all__ = [
    "UPDATE_PLAN",
    "PlanExecutionStarted",
    "PlanProgress",
    "PlanStepUpdated",
    "StepProgress",
    "StepStatus",
]

UPDATE_PLAN = "update_plan"


class StepStatus(enum.Enum):
    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    DONE = "done"


@attrs.frozen(kw_only=True)
class StepProgress:
    step_number: int
    action: str
    status: StepStatus = StepStatus.PENDING


@message()
class PlanExecutionStarted(DomainEvent):
    """The run executes an approved plan: its goal and every step, pending."""

    goal: str
    steps: tuple[StepProgress, ...]


@message()
class PlanStepUpdated(DomainEvent):
    """``agent`` marked step ``step_number`` as ``status``; ``steps`` is every step after it."""

    agent: str
    step_number: int
    status: StepStatus
    steps: tuple[StepProgress, ...]


_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "step_number": {"type": "integer", "minimum": 1, "description": "The plan's step."},
        "status": {
            "type": "string",
            "enum": [s.value for s in StepStatus],
            "description": "in_progress as you start the step, done when it is finished.",
        },
    },
    "required": ["step_number", "status"],
    "additionalProperties": False,
}


class PlanProgress:
    """The statuses of one executing plan's steps, and the tool that changes them."""

    def __init__(self, plan: Plan, record: Callable[[Event], None]) -> None:
        self.plan = plan
        self._record = record
        self._steps = {
            step.step_number: StepProgress(step_number=step.step_number, action=step.action)
            for step in plan.steps
        }
        self.tool = ToolSpec(
            name=UPDATE_PLAN,
            description=(
                "Mark a step of the approved plan you are executing: in_progress as you start "
                "it, done when it is finished (pending to undo). The person watches the list."
            ),
            parameters=_PARAMETERS,
            read_only=True,  # changes no file: runs alongside the other read-only calls
            run=self._run,
        )

    @property
    def steps(self) -> tuple[StepProgress, ...]:
        return tuple(self._steps.values())

    def started(self) -> None:
        """Record :class:`PlanExecutionStarted`: the run begins executing the plan."""
        self._record(
            PlanExecutionStarted(at=trio.current_time(), goal=self.plan.goal, steps=self.steps)
        )

    async def _run(self, context: ToolContext, arguments: Mapping[str, Any]) -> ToolResult:
        number, status = int(arguments["step_number"]), StepStatus(arguments["status"])
        step = self._steps.get(number)
        if step is None:
            numbers = ", ".join(str(n) for n in self._steps)
            raise ToolError(f"the plan has no step {number}; its steps are {numbers}")
        self._steps[number] = attrs.evolve(step, status=status)
        self._record(
            PlanStepUpdated(
                at=trio.current_time(),
                agent=context.agent,
                step_number=number,
                status=status,
                steps=self.steps,
            )
        )
        return ToolResult(ok=True, output=f"step {number} ({step.action}) is {status.value}")
