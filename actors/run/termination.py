"""How a run ended, and how its final answer was chosen: closed sets, so enums.

Both are ``StrEnum``: their members compare equal to, and serialize as, the strings the JSON
result and the event log have always carried, so old logs decode and ``== "timeout"`` holds.
A leaf module: the run's events and its result both use it.
"""

from __future__ import annotations

import enum

__all__ = ["BEST_SO_FAR", "DecidedBy", "Termination"]


class Termination(enum.StrEnum):
    COMPLETED = "completed"
    TIMEOUT = "timeout"
    MAX_COST = "max_cost"
    """The priced calls reached the run's cost budget (``--max-cost``): halted like a
    timeout, with the best answer so far."""
    CANCELLED = "cancelled"
    FAILED = "failed"
    """Coordination produced no answer, or something inside the run broke (escalation to
    the root supervisor, an unexpected exception): ``failure_reason`` says which."""
    PAUSED = "paused"
    MAX_ITERATIONS = "max_iterations"
    """The winning answer is a PAOR round's progress report: it ran out of iterations
    (``paor.max_iterations``) before its goal was achieved."""
    """An agent asked a question nobody could answer then (``--on-question pause``): the
    result's ``pending_question`` names it; ``conclave resume`` goes on with the answer."""


class DecidedBy(enum.StrEnum):
    """How the final answer was chosen, so a run decided without any vote says so."""

    VOTES = "votes"
    """The agents voted; the answer with most votes won."""
    NO_VOTES = "no_votes"
    """Coordination ended without a standing vote (voting skipped, or every voter excluded):
    the first answer stands."""
    OVERRIDE = "override"
    """A human chose the presenter in the override window."""
    TIMEOUT_BEST_SO_FAR = "timeout_best_so_far"
    """The run timed out before coordination decided: the best answer so far."""
    MAX_COST_BEST_SO_FAR = "max_cost_best_so_far"
    """The run reached its cost budget before coordination decided: the best answer so far."""
    CANCELLED_BEST_SO_FAR = "cancelled_best_so_far"
    """The run was cancelled (Ctrl+C) before coordination decided: the best answer so far."""
    FAILED_BEST_SO_FAR = "failed_best_so_far"
    """The run failed before coordination decided: the best answer so far."""


BEST_SO_FAR = {
    Termination.TIMEOUT: DecidedBy.TIMEOUT_BEST_SO_FAR,
    Termination.MAX_COST: DecidedBy.MAX_COST_BEST_SO_FAR,
    Termination.CANCELLED: DecidedBy.CANCELLED_BEST_SO_FAR,
    Termination.FAILED: DecidedBy.FAILED_BEST_SO_FAR,
}
"""How a final answer taken from the answers so far (coordination never decided) is named."""
