"""The interactive agent's own calls under the session's permissions.

Its runs' agents are held to ``permissions`` by their executors' ``before_call`` gate; the
interactive agent's own call (``launch_run``) goes through the same
:class:`~actors.human.tool_approval.ToolApprovalGate`: a ``permissions.deny`` rule refuses it
(the agent is told which rule), an ``allow`` rule or a session allowance lets it run, and in
``ask`` or ``accept-edits`` mode it asks the same approver as the runs' calls (the REPL's
card; headless, nobody: :class:`~actors.human.tool_approval.RefuseTools`).

A launch that run approval decides (``interactive_mode.require_approval``: the REPL's dialog,
``conclave chat --yes``) is not asked about twice: run approval is that launch's question,
so the gate counts it as allowed (deny rules still refuse it first).
"""

from __future__ import annotations

from pathlib import Path

import attrs

from conclave.actors.human.tool_approval import RefuseTools, ToolApprovalGate, ToolApprover
from conclave.actors.interactive.session import INTERACTIVE_AGENT_ID, LAUNCH_RUN
from conclave.actors.tools.permissions import Permissions, SessionAllowances
from conclave.config.schema.permissions import PermissionMode, PermissionsConfig, parse_rule

__all__ = ["interactive_gate"]


def interactive_gate(
    config: PermissionsConfig,
    approver: ToolApprover | None,
    *,
    session: SessionAllowances,
    workspace: Path,
    run_approval: bool,
) -> ToolApprovalGate | None:
    """The interactive agent's ``before_call`` gate; ``None`` when no call of its could ask or
    be denied (``bypass`` without deny rules). ``approver`` ``None``: nobody can approve (a
    call that asks is refused, the agent told why). ``run_approval``: each launch is decided
    by run approval, so the gate does not ask about it again. ``session`` is shared with the
    runs': what the person allowed for the session holds for both."""
    if config.mode is PermissionMode.BYPASS and not config.deny:
        return None
    permissions = Permissions.from_config(config)
    if run_approval:
        launch = parse_rule(LAUNCH_RUN.name)
        permissions = attrs.evolve(permissions, allow=(*permissions.allow, launch))
    return ToolApprovalGate(
        permissions,
        approver or RefuseTools(),
        agent=INTERACTIVE_AGENT_ID,
        workspace=workspace,
        session=session,
    )
