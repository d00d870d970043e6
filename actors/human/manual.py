"""A gate that leaves the decision to whoever holds the run handle.

With :class:`ManualGate` the override window stays open until ``RunHandle.override(agent)``
or ``RunHandle.continue_()`` decides it (messages to the coordinator), with the run clock
paused meanwhile. Scripts and tests that decide at a moment of their choosing use it; the
REPL, which answers from a dialog, implements :class:`~actors.human.gate.HumanGate` itself.
"""

from __future__ import annotations

import trio

from conclave.actors.human.gate import OverrideChoice, OverrideRequest

__all__ = ["ManualGate"]


class ManualGate:
    """Never decides by itself: the run handle's decision closes the window."""

    async def override(self, request: OverrideRequest) -> OverrideChoice:
        """Wait until cancelled (the handle decided, or the run ended)."""
        await trio.sleep_forever()
