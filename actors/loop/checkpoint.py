"""Checkpoints: what may happen between two steps of a loop.

Peer answers that arrived mid-round (the ``inject`` in-flight policy), human steering and
stale-vote checks enter a loop here, at a step boundary, where the transcript is whole.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from conclave.actors.llm.protocol import ChatMessage

__all__ = ["Abort", "Checkpoint", "CheckpointDecision", "Continue", "Inject"]


@attrs.frozen(kw_only=True)
class Continue:
    """Take the next step as planned."""


@attrs.frozen(kw_only=True)
class Inject:
    """Append ``messages`` to the transcript, then take the next step."""

    messages: tuple[ChatMessage, ...]


@attrs.frozen(kw_only=True)
class Abort:
    """End the loop now; ``reason`` says why (the outcome carries it)."""

    reason: str


CheckpointDecision = Continue | Inject | Abort
Checkpoint = Callable[[int], CheckpointDecision]
"""Called with the number of steps taken so far, before every step but the first."""

CONTINUE = Continue()
