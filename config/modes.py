"""Mode state → orchestrator overrides: DESIGN.md's one table, as a pure function.

| agent mode | refinement | overrides |
|---|---|---|
| any | on | none |
| single | off | max_new_answers_per_agent=1, skip_voting, no final presentation,  |
|        |     | context_write_phase=coordination                                  |
| multi | off | max_new_answers_per_agent=1, disable_injection,                   |
|       |     | defer_voting_until_all_answered, final_answer_strategy=synthesize  |

``context_write_phase`` says when writable context paths are written: ``presentation`` (the
default: read-only for every agent during coordination, written by the final presentation,
which then runs whatever the strategy) or ``coordination`` (single agent, refinement off: the
agent writes while it works, and no final presentation call is made). It is set here, in the
one table, so nothing else infers it.

The collaboration mode (``default | plan | execute``) is orthogonal: it changes what each
agent's loop is told and offered (plan: read-only tools and the planning instructions;
execute: the autonomy instructions), never these overrides.
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

from conclave.config.schema import ConclaveConfig, FinalAnswerStrategy
from conclave.config.schema.context import ContextWritePhase
from conclave.config.schema.modes import AgentMode, CollaborationMode
from conclave.config.wording import listed

__all__ = [
    "AgentMode",
    "CollaborationMode",
    "ModeSource",
    "ModeState",
    "UnknownAgent",
    "apply_modes",
    "overrides",
]


@attrs.frozen(kw_only=True)
class ModeState:
    collaboration: CollaborationMode = CollaborationMode.DEFAULT
    """Plan mode on is :attr:`CollaborationMode.PLAN` (Shift+Tab in the REPL)."""
    agent_mode: AgentMode = AgentMode.MULTI
    active_agent: str | None = None
    """In single mode, which configured agent runs (default: the first)."""
    refinement: bool = True

    @property
    def plan_mode(self) -> bool:
        return self.collaboration is CollaborationMode.PLAN


class ModeSource(enum.Enum):
    """Who changed the mode state (a session records it with each change)."""

    COMMAND = "command"
    """A slash command (``/mode``, ``/agent``) or a dialog's choice."""
    SHORTCUT = "shortcut"
    """A key or a click on the bar (Shift+Tab, Alt+A, an agent's tab)."""
    FLAG = "flag"
    """A command-line flag (``--mode``, ``--agent-mode``)."""
    CONFIG = "config"
    """The config's top-level ``mode:``."""
    RESTORE = "restore"
    """A resumed session's last mode state, put back."""


def overrides(state: ModeState) -> dict[str, Any]:
    """Exactly the orchestrator fields the mode state changes, by name."""
    if state.refinement:
        return {}
    if state.agent_mode is AgentMode.SINGLE:
        return {
            "max_new_answers_per_agent": 1,
            "skip_voting": True,
            "no_final_presentation": True,
            "context_write_phase": ContextWritePhase.COORDINATION,
        }
    return {
        "max_new_answers_per_agent": 1,
        "disable_injection": True,
        "defer_voting_until_all_answered": True,
        "final_answer_strategy": FinalAnswerStrategy.SYNTHESIZE,
    }


class UnknownAgent(ValueError):
    """Single mode names an agent the config does not have; the message lists those it has.
    Whoever named it says where (``--agent``, ``start_run.agent``)."""


def apply_modes(config: ConclaveConfig, state: ModeState) -> ConclaveConfig:
    """The config a run actually uses: agents narrowed for single mode, overrides applied.
    Apply it once, to the config before any mode: :mod:`config.resolver` does, for every
    front end."""
    agents = config.agents
    if state.agent_mode is AgentMode.SINGLE:
        wanted = state.active_agent or agents[0].id
        chosen = [a for a in agents if a.id == wanted]
        if not chosen:
            known = listed([a.id for a in agents], shown=10)
            raise UnknownAgent(
                f"active agent {wanted!r} is not configured; configured agents: {known}"
            )
        agents = tuple(chosen)
    orchestrator = attrs.evolve(config.orchestrator, **overrides(state))
    return attrs.evolve(config, agents=agents, orchestrator=orchestrator)
