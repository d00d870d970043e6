"""How a round's work ended (what :class:`~actors.agent.rounds.Rounds` hands the actor)."""

from __future__ import annotations

import attrs

from conclave.actors.agent.protocol import RoundOutcome

__all__ = ["Settled"]


@attrs.frozen(kw_only=True)
class Settled:
    """How a round's work ended: what was accepted (``label``), or why it failed."""

    outcome: RoundOutcome
    label: str | None = None
    reason: str = ""
