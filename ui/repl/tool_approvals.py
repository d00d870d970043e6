"""Tool approval in the REPL: a call that must ask opens the approval card and waits.

:func:`attach_tool_approvals` gives the service a :class:`ReplToolApprover` and the
session's :class:`~actors.tools.permissions.SessionAllowances` (what "Allow for this session"
allowed lasts until the REPL ends, across runs); every run the REPL drives asks it. Requests
from several agents wait their turn: one card at a time, in the order they came. The card
(:mod:`ui.repl.approval_card`) takes the input's place; Esc or Ctrl+C in it denies the call.
The run's timer is paused while it is open (:class:`~actors.human.tool_approval.ToolApprovalGate`).

The request comes on the runtime's thread, the card lives on the UI's: it is opened and
closed there (through :meth:`~ui.repl.service.ReplService.post`) and the decision comes back
through the trio token.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from conclave.actors.human.tool_approval import (
    AllowForSession,
    Deny,
    ToolApprovalRequest,
    ToolDecision,
)
from conclave.actors.tools.permissions import SessionAllowances
from conclave.ui.repl.approval_card import ToolApprovalCard
from conclave.ui.repl.state import Dialog

if TYPE_CHECKING:
    from conclave.ui.repl.app import Repl
    from conclave.ui.repl.service import ReplService

__all__ = ["ReplToolApprover", "attach_tool_approvals"]


def attach_tool_approvals(repl: Repl, service: ReplService) -> ReplToolApprover:
    """Make the card the approver of every run ``service`` drives."""
    approver = ReplToolApprover(repl, service)
    service.tool_approver = approver
    service.tool_allowances = SessionAllowances()
    repl.tool_approvals = approver
    return approver


class ReplToolApprover:
    """A :class:`~actors.human.tool_approval.ToolApprover` that asks through the card."""

    def __init__(self, repl: Repl, service: ReplService) -> None:
        self.repl = repl
        self.service = service
        self.card: ToolApprovalCard | None = None
        """The open card: read and written on the UI's thread only."""
        self._one_at_a_time = trio.Lock()

    async def approve_tool(self, request: ToolApprovalRequest) -> ToolDecision:
        """Wait for the card to be free, open it, and wait for the person. Cancellation
        (the run ended) closes the card; the call never runs."""
        async with self._one_at_a_time:
            token = trio.lowlevel.current_trio_token()
            send, receive = trio.open_memory_channel[ToolDecision](1)
            card = ToolApprovalCard(request)
            card.on_decided.append(lambda decision: token.run_sync_soon(_deliver, send, decision))
            self.service.post(lambda: self._open(card))
            try:
                decision = await receive.receive()
            finally:
                self.service.post(lambda: self._close(card))
            self.service.post(lambda: self._say(request, decision))
            return decision

    def deny(self) -> None:
        """Esc or Ctrl+C while the card is open: deny the call."""
        if self.card is not None:
            self.card.deny()

    def _open(self, card: ToolApprovalCard) -> None:
        repl, state = self.repl, self.repl.state
        self.card = card
        repl.plan_container = card.container
        state.dialog = Dialog.TOOL_APPROVAL
        repl.app.layout.update_parents_relations()  # the first key must find the card's
        repl.app.layout.focus(card.focus)
        state.on_change()

    def _close(self, card: ToolApprovalCard) -> None:
        repl, state = self.repl, self.repl.state
        if self.card is not card:
            return
        self.card = None
        if state.dialog is Dialog.TOOL_APPROVAL:
            repl.plan_container = None
            state.dialog = Dialog.NONE
            repl.app.layout.focus(repl.buffer)
        state.on_change()

    def _say(self, request: ToolApprovalRequest, decision: ToolDecision) -> None:
        what = f"{request.tool} ({request.subject})" if request.subject else request.tool
        if isinstance(decision, Deny):
            self.repl.state.tell(f"denied {what}; the agent is told")
        elif isinstance(decision, AllowForSession):
            self.repl.state.tell(f"allowed {request.tool} for this session")


def _deliver(send: trio.MemorySendChannel[ToolDecision], decision: ToolDecision) -> None:
    try:
        send.send_nowait(decision)
    except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
        return  # decided already, or nobody waits any more
