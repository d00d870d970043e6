"""The whole config, and the no-API-key default."""

from __future__ import annotations

import attrs

from conclave.config.limits import MAX_AGENTS
from conclave.config.schema.agents import AgentConfig
from conclave.config.schema.backends import ScriptedBackendConfig
from conclave.config.schema.mcp import McpServerConfig, check_unique_servers
from conclave.config.schema.modes import CollaborationMode
from conclave.config.schema.orchestrator import OrchestratorConfig
from conclave.config.schema.permissions import PermissionsConfig
from conclave.config.schema.sessions import SessionsConfig

__all__ = ["ConclaveConfig", "default_config"]


@attrs.frozen(kw_only=True)
class ConclaveConfig:
    agents: tuple[AgentConfig, ...] = attrs.field()
    orchestrator: OrchestratorConfig = attrs.field(factory=OrchestratorConfig)
    mcp_servers: tuple[McpServerConfig, ...] = attrs.field(
        default=(), validator=check_unique_servers
    )
    """MCP servers whose tools every agent is offered (see :mod:`config.schema.mcp`)."""
    mode: CollaborationMode | None = None
    """The collaboration mode the REPL starts in and ``run`` and ``batch`` run in (``--mode``
    wins, and a resumed session's own mode is restored); ``None``: ``default``."""
    sessions: SessionsConfig = attrs.field(factory=SessionsConfig)
    permissions: PermissionsConfig = attrs.field(factory=PermissionsConfig)
    """Which tool calls ask a person first, run at once, or never run."""

    @mcp_servers.validator
    def _check_agent_servers(
        self,
        _attr: attrs.Attribute[tuple[McpServerConfig, ...]],
        value: tuple[McpServerConfig, ...],
    ) -> None:
        shared = {s.name for s in value}
        for agent in self.agents if isinstance(self.agents, tuple) else ():
            for server in agent.mcp_servers:
                if server.name in shared:
                    raise ValueError(
                        f"agent {agent.id!r} has an MCP server named {server.name!r}, like a "
                        "top-level one: the tool names would clash; rename one of them"
                    )

    @agents.validator
    def _check_agents(
        self, _attr: attrs.Attribute[tuple[AgentConfig, ...]], value: tuple[AgentConfig, ...]
    ) -> None:
        if not value:
            raise ValueError("agents must list at least one agent")
        if len(value) > MAX_AGENTS:
            raise ValueError(
                f"agents lists {len(value):,} agents; a run takes at most {MAX_AGENTS:,}"
            )
        seen: set[str] = set()
        for agent in value:
            if agent.id in seen:
                raise ValueError(f"agent id {agent.id!r} appears twice; ids must be unique")
            seen.add(agent.id)


def default_config(agents: int = 3) -> ConclaveConfig:
    """The no-API-key default: scripted agents with distinct personas and a realistic-looking
    200 ms ±50 % per call, so progress is visible."""
    personas = (
        "a careful engineer",
        "a pragmatic product manager",
        "a skeptical reviewer",
        "a creative designer",
        "a patient teacher",
    )
    width = len(str(agents))
    return ConclaveConfig(
        agents=tuple(
            AgentConfig(
                id=f"scripted{str(i + 1).zfill(width)}",
                persona=personas[i % len(personas)],
                backend=ScriptedBackendConfig(seed=i, latency=0.2, jitter=0.5),
            )
            for i in range(agents)
        )
    )
