"""A finished turn of a conversation: what a later run shows its agents as history."""

from __future__ import annotations

import attrs

__all__ = ["Turn"]


@attrs.frozen(kw_only=True)
class Turn:
    """One earlier task and how it was answered. Rendered to a later run's agents as a real
    user message (the task) and assistant message (the final answer), before the new task."""

    task: str
    final_answer: str
    winner: str | None = None
    """The agent whose answer won, if any."""
    run_id: str = ""
    """The run that answered it (its log directory's name), to find its log."""
