"""The interactive agent's own calls (``launch_run``) under the session's permissions, through
the same gate as its runs' calls: a deny rule refuses a launch, ``ask`` asks the approver (or,
with nobody to ask, refuses saying why), a denial's feedback is what the agent reads, and a
launch that run approval decides is not asked about twice. Scripted agents, no latency."""

from __future__ import annotations

from pathlib import Path

import attrs

from conclave.actors.human.run_approval import ApproveAll
from conclave.actors.human.tool_approval import (
    AllowOnce,
    Deny,
    RefuseTools,
    ToolApprovalRequest,
    ToolDecision,
)
from conclave.actors.interactive.approval import interactive_gate
from conclave.actors.interactive.outcome import LaunchStatus
from conclave.actors.interactive.session import InteractiveSession
from conclave.actors.tools.permissions import SessionAllowances
from conclave.config.schema.interactive import InteractiveModeConfig
from conclave.config.schema.permissions import PermissionMode, PermissionsConfig
from conclave.ui.repl.layout import ProgressBlock
from conclave.ui.repl.render import fragments_text
from conclave.ui.repl.state import Dialog
from tests.cli.helpers import conclave, fast_agents, write_config
from tests.interactive.helpers import session
from tests.repl.harness import ENTER, Session, config, play

TASK = "Write a limerick about trio"
NO_RUN_APPROVAL = InteractiveModeConfig(require_approval=False)


class Decides:
    """A tool approver that decides every call as told, keeping what it was asked."""

    def __init__(self, decision: ToolDecision) -> None:
        self.decision = decision
        self.asked: list[ToolApprovalRequest] = []

    async def approve_tool(self, request: ToolApprovalRequest) -> ToolDecision:
        self.asked.append(request)
        return self.decision


def _gated(
    tmp_path: Path,
    permissions: PermissionsConfig,
    approver: Decides | None,
    settings: InteractiveModeConfig = NO_RUN_APPROVAL,
) -> InteractiveSession:
    agent, _ = session(tmp_path, settings=settings, approver=ApproveAll())
    agent.before_call = interactive_gate(
        permissions,
        approver,
        session=SessionAllowances(),
        workspace=tmp_path,
        run_approval=settings.require_approval,
    )
    return agent


def _refusal(agent: InteractiveSession) -> str:
    [tool] = [m.content for m in agent.transcript.messages if m.role == "tool"]
    return tool


async def test_a_deny_rule_refuses_a_launch_and_the_agent_is_told_which(tmp_path: Path) -> None:
    deny = PermissionsConfig(deny=("launch_run",))
    agent = _gated(tmp_path, deny, None, InteractiveModeConfig())

    reply = await agent.turn(TASK)

    assert reply.outcomes == ()
    assert not (tmp_path / "runs").exists()
    assert reply.text == (
        "The run could not be launched: the call to launch_run was refused: "
        "the permissions.deny rule 'launch_run' forbids it"
    )


async def test_in_ask_mode_a_launch_asks_the_approver_and_a_denial_is_what_the_agent_reads(
    tmp_path: Path,
) -> None:
    approver = Decides(Deny(feedback="not today"))
    agent = _gated(tmp_path, PermissionsConfig(mode=PermissionMode.ASK), approver)

    reply = await agent.turn(TASK)

    [asked] = approver.asked
    assert (asked.agent, asked.tool) == ("interactive", "launch_run")
    assert asked.reason == "launch_run may change things (permission mode ask)"
    assert reply.outcomes == ()
    assert "the call to launch_run was refused: the user denied it: not today" in _refusal(agent)


async def test_in_ask_mode_a_launch_allowed_once_runs(tmp_path: Path) -> None:
    approver = Decides(AllowOnce())
    agent = _gated(tmp_path, PermissionsConfig(mode=PermissionMode.ASK), approver)

    reply = await agent.turn(TASK)

    assert len(approver.asked) == 1
    assert [o.status for o in reply.outcomes] == [LaunchStatus.COMPLETED]


async def test_with_nobody_to_ask_a_launch_that_asks_is_refused_saying_why(
    tmp_path: Path,
) -> None:
    agent = _gated(tmp_path, PermissionsConfig(mode=PermissionMode.ACCEPT_EDITS), None)

    reply = await agent.turn(TASK)

    assert reply.outcomes == ()
    assert RefuseTools().reason in _refusal(agent)


async def test_a_launch_run_approval_decides_is_not_asked_about_twice(tmp_path: Path) -> None:
    approver = Decides(Deny(feedback="asked twice"))
    agent = _gated(
        tmp_path, PermissionsConfig(mode=PermissionMode.ASK), approver, InteractiveModeConfig()
    )

    reply = await agent.turn(TASK)

    assert approver.asked == []
    assert [o.status for o in reply.outcomes] == [LaunchStatus.COMPLETED]


def test_in_bypass_without_deny_rules_there_is_no_gate(tmp_path: Path) -> None:
    bypass = PermissionsConfig()
    gate = interactive_gate(
        bypass, None, session=SessionAllowances(), workspace=tmp_path, run_approval=False
    )
    assert gate is None
    assert interactive_gate(
        attrs.evolve(bypass, deny=("launch_run",)),
        None,
        session=SessionAllowances(),
        workspace=tmp_path,
        run_approval=False,
    )


def test_conclave_chat_refuses_a_launch_a_deny_rule_forbids(tmp_path: Path) -> None:
    path = write_config(tmp_path / "c.yaml", fast_agents(2), interactive_mode={})
    path.write_text(
        path.read_text(encoding="utf-8") + "permissions:\n  deny: [launch_run]\n",
        encoding="utf-8",
    )
    done = conclave("chat", "--config", str(path), "--yes", "Write a poem", cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert "the permissions.deny rule 'launch_run' forbids it" in done.stdout
    assert not (tmp_path / ".conclave" / "runs").exists()


def test_conclave_chat_in_ask_mode_refuses_an_unapproved_launch(tmp_path: Path) -> None:
    path = write_config(
        tmp_path / "c.yaml", fast_agents(2), interactive_mode={"require_approval": False}
    )
    done = conclave(
        "chat", "--config", str(path), "--permission-mode", "ask", "Write a poem", cwd=tmp_path
    )

    assert done.returncode == 0, done.stderr
    assert "nobody can approve it: the run is headless" in done.stdout
    assert "permission mode ask: nobody can approve a call in a headless run" in done.stderr
    assert not (tmp_path / ".conclave" / "runs").exists()


def test_in_the_repl_a_launch_that_asks_opens_the_tool_approval_card(tmp_path: Path) -> None:
    ask = attrs.evolve(
        config(interactive_mode=NO_RUN_APPROVAL),
        permissions=PermissionsConfig(mode=PermissionMode.ASK),
    )
    denied = "the user denied it: not today"

    async def scenario(session: Session) -> None:
        session.type(TASK)
        await session.until(lambda: session.state.dialog is Dialog.TOOL_APPROVAL, "the card")
        approvals = session.repl.tool_approvals
        assert approvals is not None and approvals.card is not None
        assert approvals.card.request.tool == "launch_run"
        head = fragments_text(session.render(ProgressBlock()))
        assert head == "Thinking · waiting for your approval\n"
        session.press("3", "not today", ENTER)
        await session.until(lambda: denied in session.transcript(), "the agent's reply")
        assert session.state.usage.runs == 0

    play(scenario, tmp_path, conclave=ask)
