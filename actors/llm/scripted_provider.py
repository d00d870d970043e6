"""The scripted backend as a pool provider: no client and no network; every agent is its own
endpoint, because each agent's script keeps its own random state."""

from __future__ import annotations

import math
from collections.abc import Hashable
from contextlib import AsyncExitStack

from conclave.actors.llm.protocol import LLMBackend
from conclave.actors.llm.scripted import ScriptedBackend
from conclave.config.schema import AgentConfig, ScriptedBackendConfig

__all__ = ["PROVIDER", "ScriptedProvider"]


class _ScriptedEndpoint:
    def backend_for(self, agent: AgentConfig) -> LLMBackend:
        policy = agent.backend
        if not isinstance(policy, ScriptedBackendConfig):
            raise TypeError(f"agent {agent.id!r} is not a scripted agent")
        return ScriptedBackend(
            agent_id=agent.id, persona=agent.persona, policy=policy, seed=policy.seed
        )


class ScriptedProvider:
    def endpoint_key(self, agent: AgentConfig) -> Hashable:
        return agent.id

    async def open_endpoint(self, agent: AgentConfig, stack: AsyncExitStack) -> _ScriptedEndpoint:
        return _ScriptedEndpoint()

    def concurrency(self, agent: AgentConfig) -> float:
        return math.inf


PROVIDER = ScriptedProvider()
