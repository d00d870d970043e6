"""``orchestrator.interactive_mode``: an agent that talks with the person and launches runs.

With the section present (and ``enabled``, its default), the REPL's turns go to an
interactive agent (:mod:`actors.interactive`) instead of straight to a run: it answers what
it can itself and calls ``launch_run`` for work that needs the panel. ``backend`` is the
model it talks to (default: the first agent's); ``require_approval`` asks the person before
each run it launches.
"""

from __future__ import annotations

import attrs

from conclave.config.schema.backends import BackendConfig
from conclave.config.schema.checks import whole

__all__ = ["ContextCompaction", "InteractiveModeConfig"]

_flag = attrs.validators.instance_of(bool)

MAX_PRESERVED = 1_000
MAX_THRESHOLD_TOKENS = 10_000_000


@attrs.frozen(kw_only=True)
class ContextCompaction:
    """When the interactive agent's conversation is summarised to keep its prompt small."""

    enabled: bool = attrs.field(default=True, validator=_flag)
    threshold_tokens: int = attrs.field(
        default=100_000, validator=whole(1_000, MAX_THRESHOLD_TOKENS)
    )
    """Compact once the last call's reported input tokens pass this."""
    preserve_recent: int = attrs.field(default=4, validator=whole(0, MAX_PRESERVED))
    """The latest exchanges (a message and its reply) kept verbatim."""


@attrs.frozen(kw_only=True)
class InteractiveModeConfig:
    enabled: bool = attrs.field(default=True, validator=_flag)
    """On when the section is present; ``false`` keeps the section but runs turns directly."""
    require_approval: bool = attrs.field(default=True, validator=_flag)
    """Ask the person (Approve / Edit / Cancel) before each run the agent launches; headless,
    ``--yes`` approves."""
    backend: BackendConfig | None = None
    """The interactive agent's model; ``None``: the first agent's backend."""
    append_system_prompt: str = attrs.field(default="", validator=attrs.validators.instance_of(str))
    """Instructions added after Conclave's own interactive prompt."""
    context_compaction: ContextCompaction = attrs.field(factory=ContextCompaction)
