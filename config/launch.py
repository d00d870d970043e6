"""``launch_run``'s arguments → the config of the run they ask for, through the one resolver.

The interactive agent (:mod:`actors.interactive`) asks for a run with a JSON object; this
module reads it into a :class:`LaunchRequest` and finishes the session's config for it the way
every front end does (:meth:`config.resolver.ResolvedConfig.for_modes`): the agents it names,
the mode table of its agent mode and refinement, then its ``coordination_overrides`` checked
against the orchestrator schema (each a field of the ``orchestrator`` section, read as the
config file's loader reads it), then the readiness checks again. What is wrong is a
:class:`LaunchError` whose message is written for the model: it comes back as the tool's
error and the agent corrects its call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import yaml

from conclave.config.modes import AgentMode, ModeState, UnknownAgent
from conclave.config.problems import ConfigError, closest
from conclave.config.resolver import ResolvedConfig
from conclave.config.schema import ConclaveConfig, OrchestratorConfig
from conclave.config.validation import check_runnable
from conclave.config.walker import INVALID, SchemaWalker
from conclave.config.wording import listed

__all__ = [
    "LAUNCH_PARAMETERS",
    "LaunchError",
    "LaunchRequest",
    "launch_config",
    "read_launch",
]

LAUNCH_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task": {"type": "string", "description": "What the run must do, completely stated."},
        "context": {
            "type": "string",
            "description": "What the agents need to know from this conversation.",
        },
        "agent_mode": {
            "type": "string",
            "enum": [m.value for m in AgentMode],
            "description": "multi (default): the panel coordinates; single: one agent.",
        },
        "agents": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Configured agent ids to run (default: all; single: the first).",
        },
        "refinement": {
            "type": "boolean",
            "description": "Agents refine and vote (default true for multi, false for single).",
        },
        "planning_mode": {
            "type": "boolean",
            "description": "Plan only: the run answers with a plan and changes nothing.",
        },
        "execute_after_planning": {
            "type": "boolean",
            "description": "With planning_mode: then run the execution of the winning plan.",
        },
        "coordination_overrides": {
            "type": "object",
            "description": "orchestrator settings for this run only (e.g. final_answer_strategy).",
        },
    },
    "required": ["task"],
    "additionalProperties": False,
}
"""The ``launch_run`` tool's parameters, exactly these."""

_NOT_OVERRIDABLE = frozenset({"interactive_mode"})
_TYPES: dict[str, type] = {
    "task": str,
    "context": str,
    "agent_mode": str,
    "agents": list,
    "refinement": bool,
    "planning_mode": bool,
    "execute_after_planning": bool,
    "coordination_overrides": dict,
}
_TYPE_WORDS = {
    str: "a string",
    list: "a list of agent ids",
    bool: "true or false",
    dict: "an object of orchestrator settings",
}


class LaunchError(ValueError):
    """``launch_run`` was called wrongly; the message says what to change."""


@attrs.frozen(kw_only=True)
class LaunchRequest:
    """One run the interactive agent asks for (see :data:`LAUNCH_PARAMETERS`)."""

    task: str
    context: str = ""
    agent_mode: AgentMode = AgentMode.MULTI
    agents: tuple[str, ...] = ()
    refinement: bool = True
    planning_mode: bool = False
    execute_after_planning: bool = False
    coordination_overrides: Mapping[str, Any] = attrs.field(factory=dict, hash=False)

    @property
    def first_message(self) -> str:
        """The run's first user message: the task, then the context the agent passed on."""
        if not self.context.strip():
            return self.task
        return f"{self.task}\n\nContext from the conversation:\n{self.context.strip()}"

    def mode_state(self) -> ModeState:
        single = self.agent_mode is AgentMode.SINGLE
        return ModeState(
            agent_mode=self.agent_mode,
            active_agent=self.agents[0] if single and self.agents else None,
            refinement=self.refinement,
        )


def read_launch(arguments: Mapping[str, Any]) -> LaunchRequest:
    """The request in ``arguments`` (the tool call's parsed JSON). Raises
    :class:`LaunchError` naming every wrong or unknown parameter at once."""
    wrong: list[str] = []
    for name, value in arguments.items():
        if name not in _TYPES:
            near = closest(name, _TYPES)
            hint = f" (did you mean {near!r}?)" if near else ""
            names = listed(list(_TYPES), shown=len(_TYPES))
            wrong.append(f"unknown parameter {name!r}{hint}; the parameters are {names}")
        elif not isinstance(value, _TYPES[name]) or (
            isinstance(value, bool) and _TYPES[name] is not bool
        ):
            wrong.append(f"{name!r} must be {_TYPE_WORDS[_TYPES[name]]}; got {value!r}")
    task = arguments.get("task")
    if "task" not in arguments:
        wrong.append("'task' is required: say what the run must do")
    elif isinstance(task, str) and not task.strip():
        wrong.append("'task' is empty: say what the run must do")
    mode = arguments.get("agent_mode", AgentMode.MULTI.value)
    if isinstance(mode, str) and mode not in {m.value for m in AgentMode}:
        wrong.append(f"'agent_mode' must be single or multi; got {mode!r}")
    agents = arguments.get("agents", [])
    if isinstance(agents, list) and not all(isinstance(a, str) for a in agents):
        wrong.append(f"'agents' must be a list of agent ids (strings); got {agents!r}")
    if wrong:
        raise LaunchError("; ".join(wrong))
    agent_mode = AgentMode(mode)
    return LaunchRequest(
        task=str(task),
        context=str(arguments.get("context", "")),
        agent_mode=agent_mode,
        agents=tuple(agents),
        refinement=bool(arguments.get("refinement", agent_mode is AgentMode.MULTI)),
        planning_mode=bool(arguments.get("planning_mode", False)),
        execute_after_planning=bool(arguments.get("execute_after_planning", False)),
        coordination_overrides=dict(arguments.get("coordination_overrides", {})),
    )


def launch_config(resolved: ResolvedConfig, request: LaunchRequest) -> ConclaveConfig:
    """The config of the run ``request`` asks for. Raises :class:`LaunchError`."""
    base = resolved.base
    if request.execute_after_planning and not request.planning_mode:
        raise LaunchError(
            "'execute_after_planning' executes the plan of a planning run; add "
            "'planning_mode': true, or drop it"
        )
    known = [a.id for a in base.agents]
    unknown = [a for a in request.agents if a not in known]
    if unknown:
        raise LaunchError(
            f"no agent {listed(unknown)} is configured; configured agents: {listed(known)}"
        )
    if request.agents and request.agent_mode is AgentMode.MULTI:
        base = attrs.evolve(base, agents=tuple(a for a in base.agents if a.id in request.agents))
    narrowed = attrs.evolve(resolved, base=base)
    try:
        config = narrowed.for_modes(request.mode_state())
    except UnknownAgent as exc:
        raise LaunchError(str(exc)) from None
    except ConfigError as exc:
        raise LaunchError(f"the run's config cannot run: {exc}") from None
    orchestrator = _overridden(config.orchestrator, request.coordination_overrides)
    config = attrs.evolve(config, orchestrator=orchestrator)
    try:
        check_runnable(config)
    except ConfigError as exc:
        raise LaunchError(f"with these coordination_overrides the run cannot run: {exc}") from None
    return config


def _overridden(
    orchestrator: OrchestratorConfig, overrides: Mapping[str, Any]
) -> OrchestratorConfig:
    """``orchestrator`` with ``overrides``, each read by the config file's walker (so an enum
    is its value, a section a mapping) and checked by the schema's validators."""
    if not overrides:
        return orchestrator
    fields = {f.name: f for f in attrs.fields(attrs.resolve_types(OrchestratorConfig))}
    allowed = [name for name in fields if name not in _NOT_OVERRIDABLE]
    walker = SchemaWalker(source=None, environ=None)
    node = yaml.compose(yaml.safe_dump(dict(overrides)))
    assert isinstance(node, yaml.MappingNode)
    changes: dict[str, Any] = {}
    wrong: list[str] = []
    for key, _key_node, value_node in walker.pairs(node, "coordination_overrides"):
        if key not in allowed:
            near = closest(key, allowed)
            hint = f"did you mean {near!r}? " if near else ""
            wrong.append(
                f"coordination_overrides: {key!r} is not an orchestrator setting a run may "
                f"override; {hint}the settings are {listed(allowed, shown=30)}"
            )
            continue
        value = walker.walk(value_node, fields[key].type, f"coordination_overrides.{key}")
        if value is not INVALID:
            changes[key] = value
    wrong += [
        f"{p.path}: {p.message}" + (f" (did you mean {p.suggestion!r}?)" if p.suggestion else "")
        for p in walker.errors
    ]
    if not wrong:
        try:
            return attrs.evolve(orchestrator, **changes)
        except (ValueError, TypeError) as exc:
            wrong.append(f"coordination_overrides: {exc}")
    raise LaunchError("; ".join(wrong))
