"""The configuration schema: frozen, keyword-only, validated when loaded, trusted after.

One module per section, so a new backend or section is a new file: ``backends`` (which LLM),
``agents``, ``orchestrator`` (coordination), ``root`` (the whole config).
"""

from conclave.config.schema.agents import AgentConfig
from conclave.config.schema.backends import BackendConfig, Misbehaviour, ScriptedBackendConfig
from conclave.config.schema.orchestrator import (
    FinalAnswerStrategy,
    InFlightPolicy,
    OrchestratorConfig,
    parse_visibility,
)
from conclave.config.schema.paor import LoopKind, PaorConfig
from conclave.config.schema.root import ConclaveConfig, default_config

__all__ = [
    "AgentConfig",
    "BackendConfig",
    "ConclaveConfig",
    "FinalAnswerStrategy",
    "InFlightPolicy",
    "LoopKind",
    "Misbehaviour",
    "OrchestratorConfig",
    "PaorConfig",
    "ScriptedBackendConfig",
    "default_config",
    "parse_visibility",
]
