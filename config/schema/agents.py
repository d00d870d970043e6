"""The ``agents`` section: who works on the task."""

from __future__ import annotations

import re

import attrs

from conclave.config.schema.backends import BackendConfig, ScriptedBackendConfig
from conclave.config.schema.checks import InvalidValue
from conclave.config.schema.endpoint import Price
from conclave.config.schema.mcp import McpServerConfig, check_unique_servers
from conclave.config.schema.paor import LoopKind, PaorConfig

__all__ = ["AgentConfig", "price_of"]

_AGENT_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def _check_agent_id(_inst: object, _attr: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not _AGENT_ID.match(value):
        raise InvalidValue(
            f"agent id {value!r} must be 1-64 letters, digits, '_', '.' or '-'",
            expected="1-64 letters, digits, '_', '.' or '-'",
        )


@attrs.frozen(kw_only=True, cache_hash=True)
class AgentConfig:
    id: str = attrs.field(validator=_check_agent_id)
    persona: str = ""
    """Who the agent is, in a phrase ("a skeptical reviewer"); shown in its prompts."""
    system_prompt: str = ""
    """Custom instructions, added to Conclave's own system prompt (which carries the
    coordination rules and tools, and always comes first)."""
    backend: BackendConfig = attrs.field(factory=ScriptedBackendConfig)
    mcp_servers: tuple[McpServerConfig, ...] = attrs.field(
        default=(), validator=check_unique_servers
    )
    """MCP servers only this agent is offered, besides the top-level ones."""
    loop: LoopKind = LoopKind.FREE
    """How the agent's answer rounds run: one free tool loop, or plan-act-observe-reflect."""
    paor: PaorConfig = attrs.field(factory=PaorConfig)
    """The plan-act-observe-reflect loop's limits (used with ``loop: paor``)."""


def price_of(agent: AgentConfig) -> Price | None:
    """The agent's price per million tokens, if its backend section gives one (a scripted
    backend's is pretend: it lets cost limits be tried offline)."""
    return agent.backend.price
