"""The plan a PAOR agent submits (``submit_plan``): steps with their tools and dependencies.

The tool's arguments are checked here; a plan that does not hold together (no steps, a step
id twice, a dependency on a step that is not in the plan, a dependency cycle, which the
message names, a tool the agent is not offered) goes back to the model with what was wrong,
as any broken call does. :func:`waves` orders the steps by their dependencies.

A step may be *delegated* (``delegate``: ``explore`` or ``worker``): a sub-agent of its own
carries it out (:mod:`actors.paor.subagents`). Delegated steps depend only on delegated
steps (they run before the agent's own steps, which may depend on them), and a plan may
delegate only where sub-agents may nest (``paor.max_depth``).
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from conclave.actors.llm.protocol import ToolSchema
from conclave.config.schema.paor import SubAgentKind

__all__ = [
    "SUBMIT_PLAN",
    "BadPlan",
    "Plan",
    "PlanStep",
    "SubAgentKind",
    "find_cycle",
    "parse_plan",
    "waves",
]


@attrs.frozen(kw_only=True)
class PlanStep:
    id: str
    action: str
    """What the step does, in a sentence."""
    tools: tuple[str, ...] = ()
    """The tools it expects to call."""
    depends_on: tuple[str, ...] = ()
    """Ids of the steps that must be done first."""
    delegate: SubAgentKind | None = None
    """A sub-agent of this kind carries the step out; ``None``: the agent itself."""


@attrs.frozen(kw_only=True)
class Plan:
    goal: str
    steps: tuple[PlanStep, ...]

    @property
    def delegated(self) -> tuple[PlanStep, ...]:
        """The steps sub-agents carry out."""
        return tuple(s for s in self.steps if s.delegate is not None)

    @property
    def own(self) -> tuple[PlanStep, ...]:
        """The steps the agent carries out itself."""
        return tuple(s for s in self.steps if s.delegate is None)

    def describe(self) -> str:
        """The plan as the model is shown it while acting: in dependency order."""
        lines = [f"Goal: {self.goal}"]
        for step in (s for wave in waves(self) for s in wave):
            after = f" (after {', '.join(step.depends_on)})" if step.depends_on else ""
            tools = f" [tools: {', '.join(step.tools)}]" if step.tools else ""
            by = f" [sub-agent: {step.delegate.value}]" if step.delegate else ""
            lines.append(f"{step.id}. {step.action}{tools}{by}{after}")
        return "\n".join(lines)


class BadPlan(ValueError):
    """What was wrong with a submitted plan, said to the model."""


SUBMIT_PLAN = ToolSchema(
    name="submit_plan",
    description=(
        "Submit the plan for the next iteration: the goal, and the steps to reach it, each "
        "with the tools it will call and the ids of the steps it depends on. A step may be "
        "delegated to a sub-agent of its own (delegate: explore, read-only, to understand "
        "code and summarise it; worker, with your tools, to carry out a sub-task): its "
        "action is the sub-agent's task, delegated steps run first (independent ones at "
        "once) and depend only on delegated steps, and their results are shown to you."
    ),
    parameters={
        "type": "object",
        "properties": {
            "goal": {"type": "string"},
            "steps": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "action": {"type": "string"},
                        "tools": {"type": "array", "items": {"type": "string"}},
                        "depends_on": {"type": "array", "items": {"type": "string"}},
                        "delegate": {"type": "string", "enum": [k.value for k in SubAgentKind]},
                    },
                    "required": ["id", "action"],
                },
            },
        },
        "required": ["goal", "steps"],
    },
    read_only=True,
)


def parse_plan(arguments: str, offered: frozenset[str], *, may_delegate: bool = True) -> Plan:
    """The plan in a ``submit_plan`` call's arguments; raises :class:`BadPlan`.
    ``may_delegate``: whether sub-agents may carry steps out here (``paor.max_depth``)."""
    try:
        data = json.loads(arguments or "{}")
    except json.JSONDecodeError as exc:
        raise BadPlan(f"submit_plan's arguments are not JSON ({exc}); send an object") from None
    if not isinstance(data, dict):
        raise BadPlan("submit_plan's arguments must be an object with goal and steps")
    goal = data.get("goal")
    raw_steps = data.get("steps")
    if not isinstance(goal, str) or not goal.strip():
        raise BadPlan("submit_plan needs a goal: a non-empty string")
    if not isinstance(raw_steps, list) or not raw_steps:
        raise BadPlan("submit_plan needs steps: a non-empty list of {id, action, tools, ...}")
    steps = tuple(_step(i, raw) for i, raw in enumerate(raw_steps))
    ids = [s.id for s in steps]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise BadPlan(f"step ids must be unique; {', '.join(twice)} appear more than once")
    for step in steps:
        unknown = [d for d in step.depends_on if d not in ids]
        if unknown:
            raise BadPlan(
                f"step {step.id} depends on {', '.join(unknown)}, which the plan does not have"
            )
        if step.delegate is not None:
            _check_delegated(step, steps, may_delegate=may_delegate)
        missing = [t for t in step.tools if t not in offered]
        if missing:
            available = ", ".join(sorted(offered)) or "none"
            raise BadPlan(
                f"step {step.id} names tools that are not available: {', '.join(missing)}; "
                f"the available tools are: {available}"
            )
    cycle = find_cycle(steps)
    if cycle:
        raise BadPlan(
            f"the steps' dependencies form a cycle: {' -> '.join(cycle)}; a step cannot wait "
            "for itself: drop one of these dependencies"
        )
    return Plan(goal=goal, steps=steps)


def _check_delegated(step: PlanStep, steps: tuple[PlanStep, ...], *, may_delegate: bool) -> None:
    if not may_delegate:
        raise BadPlan(
            f"step {step.id} is delegated, but sub-agents cannot nest deeper here "
            "(paor.max_depth): carry the step out yourself (leave delegate out)"
        )
    own = {s.id for s in steps if s.delegate is None}
    after_own = [d for d in step.depends_on if d in own]
    if after_own:
        raise BadPlan(
            f"delegated step {step.id} depends on {', '.join(after_own)}, which you carry out "
            "yourself; delegated steps run first and may depend only on delegated steps"
        )


def find_cycle(steps: tuple[PlanStep, ...]) -> list[str]:
    """A dependency cycle among ``steps``, as the ids around it with the first repeated at
    the end (``["1", "2", "1"]``); empty when there is none. Dependencies are known ids."""
    after = {step.id: step.depends_on for step in steps}
    done: set[str] = set()
    for start in after:
        if start in done:
            continue
        path: list[str] = []
        on_path: dict[str, int] = {}
        stack: list[tuple[str, int]] = [(start, 0)]
        while stack:
            node, index = stack.pop()
            if index == 0:
                on_path[node] = len(path)
                path.append(node)
            deps = after[node]
            if index < len(deps):
                stack.append((node, index + 1))
                nxt = deps[index]
                if nxt in on_path:
                    return [*path[on_path[nxt] :], nxt]
                if nxt not in done:
                    stack.append((nxt, 0))
                continue
            done.add(node)
            del on_path[node]
            path.pop()
    return []


def waves(plan: Plan) -> list[list[PlanStep]]:
    """The plan's steps in dependency order: each wave's steps depend only on earlier waves'
    (so the steps of one wave are independent of each other). The plan has no cycle."""
    placed: dict[str, int] = {}
    pending = list(plan.steps)
    result: list[list[PlanStep]] = []
    while pending:
        ready = [s for s in pending if all(d in placed for d in s.depends_on)]
        for step in ready:
            placed[step.id] = len(result)
        result.append(ready)
        pending = [s for s in pending if s.id not in placed]
    return result


def _step(index: int, raw: Any) -> PlanStep:
    if not isinstance(raw, dict):
        raise BadPlan(f"steps[{index}] must be an object with id and action")
    ident, action = raw.get("id", str(index + 1)), raw.get("action")
    tools, depends = raw.get("tools", []), raw.get("depends_on", [])
    delegate = raw.get("delegate")
    if not isinstance(ident, str | int) or isinstance(ident, bool):
        raise BadPlan(f"steps[{index}].id must be a string")
    if not isinstance(action, str) or not action.strip():
        raise BadPlan(f"steps[{index}].action must be a non-empty string")
    if not _strings(tools) or not _strings(depends):
        raise BadPlan(f"steps[{index}].tools and depends_on must be lists of strings")
    kinds = {k.value: k for k in SubAgentKind}
    if delegate is not None and delegate not in kinds:
        raise BadPlan(
            f"steps[{index}].delegate must be one of {', '.join(kinds)} (or left out), "
            f"got {delegate!r}"
        )
    return PlanStep(
        id=str(ident),
        action=action,
        tools=tuple(tools),
        depends_on=tuple(depends),
        delegate=None if delegate is None else kinds[delegate],
    )


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)
