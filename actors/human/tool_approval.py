"""Tool approval: a person allows or denies a call the permission mode says must ask.

The executor's ``before_call`` hook is a :class:`ToolApprovalGate`: it rules on each call
(:mod:`actors.tools.permissions`) and hands one that must ask to a :class:`ToolApprover` —
the REPL's approval card, or a headless policy. The person may allow it once, allow it for
the session, or deny it with feedback; a denial is the call's result, so the model reads
the feedback and goes on (a refused call is a tool error, never a failed try). While the
person decides, the run's timer is paused.

Headless runs have nobody to ask. Like ``claude -p``, a call that must ask is then refused,
the model told how the user could allow it (:class:`RefuseTools`); ``--permission-mode
bypass`` (the headless default) or ``permissions.allow`` rules let such calls run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, Protocol

import attrs
import trio

from conclave.actors.human.events import (
    ApprovalOutcome,
    ToolApprovalDecided,
    ToolApprovalRequested,
)
from conclave.actors.llm.protocol import ToolCall
from conclave.actors.tools.permissions import Permissions, SessionAllowances, Verdict, subjects_of
from conclave.runtime import Event

__all__ = [
    "AllowForSession",
    "AllowOnce",
    "AllowTools",
    "Deny",
    "GatedTool",
    "RefuseTools",
    "ToolApprovalGate",
    "ToolApprovalRequest",
    "ToolApprover",
    "ToolDecision",
]


@attrs.frozen(kw_only=True)
class ToolApprovalRequest:
    """What a person is shown: who wants to call what, and why it asks."""

    agent: str
    tool: str
    arguments: str
    """The arguments as the model wrote them (JSON)."""
    subject: str | None
    """The path or command the call touches, as written (``None``: neither)."""
    reason: str
    """Why it asks: ``delete_file deletes notes.txt (permission mode accept-edits)``."""


@attrs.frozen(kw_only=True)
class AllowOnce:
    """Run this call."""


@attrs.frozen(kw_only=True)
class AllowForSession:
    """Run this call, and the same again without asking while the session lasts: the same
    shell command exactly, any call of another tool."""


@attrs.frozen(kw_only=True)
class Deny:
    """Do not run it; ``feedback`` is what the model reads instead of the tool's output."""

    feedback: str = ""
    by_person: bool = True
    """``False``: a policy refused it (nobody was asked), and the model is not told that
    the user denied it."""


ToolDecision = AllowOnce | AllowForSession | Deny


class ToolApprover(Protocol):
    async def approve_tool(self, request: ToolApprovalRequest) -> ToolDecision:
        """Decide one call. Cancellation (the run ended) abandons the question: the call
        never runs."""
        ...


class AllowTools:
    """Every call that asks is allowed once (scripts and tests that approve everything)."""

    async def approve_tool(self, request: ToolApprovalRequest) -> ToolDecision:
        return AllowOnce()


@attrs.frozen
class RefuseTools:
    """Nobody can approve: every call that asks is denied, saying ``reason``."""

    reason: str = (
        "nobody can approve it: the run is headless; the user may allow it with a "
        "permissions.allow rule or --permission-mode bypass"
    )

    async def approve_tool(self, request: ToolApprovalRequest) -> ToolDecision:
        return Deny(feedback=self.reason, by_person=False)


class GatedTool(Protocol):
    """What the gate reads of the tool called: a built-in or MCP tool's
    :class:`~actors.tools.spec.ToolSpec`, or a tool's schema (the interactive agent's
    ``launch_run``)."""

    @property
    def name(self) -> str: ...

    @property
    def read_only(self) -> bool: ...


class ToolApprovalGate:
    """One agent's ``before_call`` hook: rules on each call, and asks ``approver`` about
    those that must ask (one at a time per agent: the executor runs a step's writing calls
    in turn). ``paused`` pauses the run's timer while the person decides."""

    def __init__(
        self,
        permissions: Permissions,
        approver: ToolApprover,
        *,
        agent: str,
        workspace: Path,
        session: SessionAllowances,
        paused: Callable[[], AbstractContextManager[object]] = nullcontext,
        record: Callable[[Event], None] | None = None,
    ) -> None:
        self.permissions = permissions
        self.approver = approver
        self.agent = agent
        self.workspace = workspace
        """Relative paths in calls are read from here, as the tools read them."""
        self.session = session
        self.paused = paused
        self.record = record
        """Where :class:`ToolApprovalRequested` and :class:`ToolApprovalDecided` go (the
        run's event log); ``None``: nowhere."""

    async def __call__(
        self, call: ToolCall, spec: GatedTool, arguments: Mapping[str, Any]
    ) -> str | None:
        """``None`` when the call may run, else what the model is told."""
        subjects = subjects_of(arguments, self.workspace)
        ruling = self.permissions.rule(
            spec.name, read_only=spec.read_only, subjects=subjects, session=self.session
        )
        if ruling.verdict is Verdict.ALLOW:
            return None
        if ruling.verdict is Verdict.DENY:
            return ruling.reason
        request = ToolApprovalRequest(
            agent=self.agent,
            tool=spec.name,
            arguments=call.arguments,
            subject=subjects.shown,
            reason=ruling.reason,
        )
        self._record(
            ToolApprovalRequested(
                at=trio.current_time(),
                agent=self.agent,
                tool=spec.name,
                call_id=call.id,
                subject=subjects.shown,
                reason=ruling.reason,
            )
        )
        with self.paused():
            decision = await self.approver.approve_tool(request)
        outcome, feedback = _outcome(decision)
        self._record(
            ToolApprovalDecided(
                at=trio.current_time(),
                agent=self.agent,
                tool=spec.name,
                call_id=call.id,
                outcome=outcome,
                feedback=feedback,
            )
        )
        if isinstance(decision, AllowForSession):
            self.session.add(spec.name, subjects)
            return None
        if isinstance(decision, AllowOnce):
            return None
        said = feedback or "no reason given"
        return f"the user denied it: {said}" if decision.by_person else said

    def _record(self, event: Event) -> None:
        if self.record is not None:
            self.record(event)


def _outcome(decision: ToolDecision) -> tuple[ApprovalOutcome, str]:
    if isinstance(decision, AllowOnce):
        return ApprovalOutcome.ALLOWED_ONCE, ""
    if isinstance(decision, AllowForSession):
        return ApprovalOutcome.ALLOWED_FOR_SESSION, ""
    return ApprovalOutcome.DENIED, decision.feedback.strip()
