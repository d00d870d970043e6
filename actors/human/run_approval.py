"""Run approval: the person agrees to a run the interactive agent wants to launch.

With ``interactive_mode.require_approval`` the launcher asks a :class:`RunApprover` before
each run: the REPL's dialog (Approve / Edit / Cancel), or a headless policy: :class:`ApproveAll`
(``conclave chat --yes``) or :class:`RefuseAll` (no person to ask and no ``--yes``: the
agent hears why and can say so). A cancelled run is a result the agent reads, not an error:
the conversation goes on.
"""

from __future__ import annotations

from typing import Protocol

import attrs

from conclave.config.modes import AgentMode

__all__ = [
    "ApproveAll",
    "Approved",
    "RefuseAll",
    "RunApprovalRequest",
    "RunApprover",
    "RunDecision",
    "RunRefused",
]


@attrs.frozen(kw_only=True)
class RunApprovalRequest:
    """What the person is shown before a run starts."""

    task: str
    context: str
    agents: tuple[str, ...]
    """The agents that will run, in config order."""
    agent_mode: AgentMode
    refinement: bool
    planning_mode: bool = False
    execute_after_planning: bool = False


@attrs.frozen(kw_only=True)
class Approved:
    """Run it, with ``task`` and ``context`` as the person left them (edited or not)."""

    task: str
    context: str


@attrs.frozen(kw_only=True)
class RunRefused:
    """Do not run it; ``reason`` is what the agent is told."""

    reason: str


RunDecision = Approved | RunRefused


class RunApprover(Protocol):
    async def approve_run(self, request: RunApprovalRequest) -> RunDecision:
        """Decide whether the run starts. Cancellation abandons the question (no run)."""
        ...


class ApproveAll:
    """Every run as asked (``--yes``, or approval not required)."""

    async def approve_run(self, request: RunApprovalRequest) -> RunDecision:
        return Approved(task=request.task, context=request.context)


@attrs.frozen
class RefuseAll:
    """Nobody can approve: every run is refused, saying ``reason``."""

    reason: str = "nobody could approve it: the session is headless (pass --yes to approve runs)"

    async def approve_run(self, request: RunApprovalRequest) -> RunDecision:
        return RunRefused(reason=self.reason)
