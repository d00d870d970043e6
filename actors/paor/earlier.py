"""The iterations a round's transcript holds already: where a resumed round goes on from.

A round paused on a PAOR reflection's question (``--on-question pause``) is resumed with its
transcript rebuilt from the run's files (:mod:`actors.agent.resume`), and an agent whose
actor restarted mid-round goes on with the transcript in its memory. Either way the round's
earlier iterations are in it: each accepted ``submit_plan`` call started one, the tool calls
after it were its observations, and its accepted ``reflect`` call judged it. Read back, they
keep the round's count true (its ``max_iterations`` counts across the pause, and its summary
says how many iterations it really took) and give the summary the plans and reflections it
reports.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import attrs

from conclave.actors.llm.protocol import ChatMessage
from conclave.actors.paor.observe import Observation
from conclave.actors.paor.plan import SUBMIT_PLAN, BadPlan, Plan, parse_plan
from conclave.actors.paor.reflect import REFLECT, BadReflection, Reflection, parse_reflection

__all__ = ["Earlier", "earlier_iterations"]

_REFUSED = "Error: "
"""How a tool result the model was refused begins (a final call's, or a tool's failure)."""


@attrs.frozen(kw_only=True)
class Earlier:
    plans: tuple[Plan, ...] = ()
    """Each earlier iteration's plan, in order: one per iteration."""
    reflections: tuple[Reflection, ...] = ()
    observations: tuple[tuple[Observation, ...], ...] = ()
    """Each earlier iteration's own tool calls (their durations are not in a transcript: 0)."""

    @property
    def iterations(self) -> int:
        return len(self.plans)


def earlier_iterations(messages: Sequence[ChatMessage]) -> Earlier:
    """The iterations whose plans ``messages`` hold (none for a fresh round)."""
    results = {m.tool_call_id: m.content for m in messages if m.role == "tool"}
    plans: list[Plan] = []
    reflections: list[Reflection] = []
    observations: list[list[Observation]] = []
    for message in messages:
        for call in message.tool_calls:
            result = results.get(call.id)
            if result is None:
                continue  # the call the round paused on, its answer still to come
            refused = result.startswith(_REFUSED)
            if call.name == SUBMIT_PLAN.name:
                plan = None if refused else _plan(call.arguments)
                if plan is not None:
                    plans.append(plan)
                    observations.append([])
            elif call.name == REFLECT.name:
                reflection = None if refused else _reflection(call.arguments)
                if reflection is not None:
                    reflections.append(reflection)
            elif observations:
                observations[-1].append(_observation(call.name, call.arguments, result))
    return Earlier(
        plans=tuple(plans),
        reflections=tuple(reflections),
        observations=tuple(tuple(seen) for seen in observations),
    )


def _plan(arguments: str) -> Plan | None:
    """A plan accepted before: its tools were offered then, so they are taken as offered."""
    try:
        data = json.loads(arguments or "{}")
        steps = data.get("steps") if isinstance(data, dict) else None
        named = {
            tool
            for step in steps or ()
            if isinstance(step, dict)
            for tool in step.get("tools") or ()
            if isinstance(tool, str)
        }
        return parse_plan(arguments, frozenset(named))
    except (json.JSONDecodeError, BadPlan):
        return None


def _reflection(arguments: str) -> Reflection | None:
    try:
        return parse_reflection(arguments)
    except BadReflection:
        return None


def _observation(tool: str, arguments: str, result: str) -> Observation:
    failed = result.startswith(_REFUSED)
    return Observation(
        tool=tool,
        arguments=arguments,
        output="" if failed else result,
        duration=0.0,
        success=not failed,
        error=result.removeprefix(_REFUSED) if failed else None,
    )
