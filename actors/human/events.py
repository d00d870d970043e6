"""Events of the person in the loop: a tool call that asked, and what was decided.

Recorded by :class:`~actors.human.tool_approval.ToolApprovalGate` around each call that must
ask, so the event log, ``conclave replay`` and stream-json say who was asked what and how it
was answered (a headless refusal included), not only that the call failed.
"""

from __future__ import annotations

import enum

from conclave.actors.events.base import DomainEvent
from conclave.runtime import message

__all__ = ["ApprovalOutcome", "ToolApprovalDecided", "ToolApprovalRequested"]


class ApprovalOutcome(enum.Enum):
    ALLOWED_ONCE = "allowed_once"
    ALLOWED_FOR_SESSION = "allowed_for_session"
    DENIED = "denied"


@message()
class ToolApprovalRequested(DomainEvent):
    """A call that the permission mode says must ask waits for the person."""

    agent: str
    tool: str
    call_id: str
    subject: str | None
    """The path or command it touches, as written (``None``: neither)."""
    reason: str
    """Why it asks."""


@message()
class ToolApprovalDecided(DomainEvent):
    """The person (or the headless policy) decided the call ``call_id``."""

    agent: str
    tool: str
    call_id: str
    outcome: ApprovalOutcome
    feedback: str = ""
    """With a denial: what the model is told (empty: no reason given)."""
