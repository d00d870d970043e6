"""The approval gate as the executor's ``before_call``: a call that must ask goes to the
approver, who allows it once, for the session, or denies it with feedback the model reads;
headless, nobody approves and the call is refused saying how to allow it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import trio

from conclave.actors.human.events import (
    ApprovalOutcome,
    ToolApprovalDecided,
    ToolApprovalRequested,
)
from conclave.actors.human.tool_approval import (
    AllowForSession,
    AllowOnce,
    Deny,
    RefuseTools,
    ToolApprovalGate,
    ToolApprovalRequest,
    ToolDecision,
)
from conclave.actors.llm.protocol import ToolCall
from conclave.actors.tools.files import DELETE_FILE
from conclave.actors.tools.permissions import Permissions, SessionAllowances
from conclave.config.schema.permissions import PermissionMode
from conclave.runtime import Event
from tests.tools.conftest import MakeTools
from tests.tools.helpers import call


class Person:
    """Answers each request with the next decision, keeping what it was asked."""

    def __init__(self, *decisions: ToolDecision) -> None:
        self.decisions = list(decisions)
        self.asked: list[ToolApprovalRequest] = []

    async def approve_tool(self, request: ToolApprovalRequest) -> ToolDecision:
        self.asked.append(request)
        return self.decisions.pop(0)


def _gate(
    approver: Person | RefuseTools,
    workspace: Path,
    mode: PermissionMode = PermissionMode.ASK,
    session: SessionAllowances | None = None,
    events: list[Event] | None = None,
) -> ToolApprovalGate:
    return ToolApprovalGate(
        Permissions(mode=mode),
        approver,
        agent="agent1",
        workspace=workspace,
        session=session or SessionAllowances(),
        record=events.append if events is not None else None,
    )


async def test_a_delete_denied_with_feedback_does_not_run_and_the_model_reads_why(
    make_tools: MakeTools, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("keep me")
    person = Person(Deny(feedback="keep the notes; archive them instead"))
    tools = make_tools(before_call=_gate(person, workspace))

    result = await call(tools, "delete_file", path="notes.txt")

    assert (workspace / "notes.txt").exists()
    assert result.refused
    assert result.for_model() == (
        "Error: the call to delete_file was refused: the user denied it: "
        "keep the notes; archive them instead"
    )


async def test_the_person_is_shown_the_call_and_why_it_asks(
    make_tools: MakeTools, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("x")
    person = Person(AllowOnce())
    await call(make_tools(before_call=_gate(person, workspace)), "delete_file", path="notes.txt")

    [request] = person.asked
    assert (request.agent, request.tool, request.subject) == ("agent1", "delete_file", "notes.txt")
    assert request.reason == "delete_file deletes notes.txt (permission mode ask)"


async def test_allowed_once_the_call_runs_and_the_next_one_asks_again(
    make_tools: MakeTools, workspace: Path
) -> None:
    person = Person(AllowOnce(), Deny())
    tools = make_tools(before_call=_gate(person, workspace))

    first = await call(tools, "write_file", path="a.txt", content="1")
    second = await call(tools, "write_file", path="b.txt", content="2")

    assert first.ok and (workspace / "a.txt").read_text() == "1"
    assert second.error == "the call to write_file was refused: the user denied it: no reason given"
    assert len(person.asked) == 2


async def test_allowed_for_the_session_the_same_tool_no_longer_asks(
    make_tools: MakeTools, workspace: Path
) -> None:
    person = Person(AllowForSession())
    tools = make_tools(before_call=_gate(person, workspace))

    await call(tools, "write_file", path="a.txt", content="1")
    again = await call(tools, "write_file", path="b.txt", content="2")

    assert again.ok
    assert len(person.asked) == 1


async def test_headless_a_call_that_must_ask_is_refused_saying_how_to_allow_it(
    make_tools: MakeTools, workspace: Path
) -> None:
    tools = make_tools(before_call=_gate(RefuseTools(), workspace))

    result = await call(tools, "write_file", path="a.txt", content="1")

    assert not (workspace / "a.txt").exists()
    assert result.error == f"the call to write_file was refused: {RefuseTools().reason}"


async def test_a_call_that_need_not_ask_never_reaches_the_person(
    make_tools: MakeTools, workspace: Path
) -> None:
    person = Person()
    tools = make_tools(before_call=_gate(person, workspace, PermissionMode.ACCEPT_EDITS))

    assert (await call(tools, "write_file", path="a.txt", content="1")).ok
    assert person.asked == []


async def test_the_run_timer_is_paused_while_the_person_decides(workspace: Path) -> None:
    pauses: list[str] = []

    @contextmanager
    def paused() -> Iterator[None]:
        pauses.append("paused")
        yield
        pauses.append("resumed")

    class Slow:
        async def approve_tool(self, request: ToolApprovalRequest) -> ToolDecision:
            pauses.append("asked")
            await trio.lowlevel.checkpoint()
            return AllowOnce()

    gate = ToolApprovalGate(
        Permissions(mode=PermissionMode.ASK),
        Slow(),
        agent="agent1",
        workspace=workspace,
        session=SessionAllowances(),
        paused=paused,
    )
    await gate(ToolCall(id="c", name="delete_file", arguments="{}"), DELETE_FILE, {"path": "x"})
    assert pauses == ["paused", "asked", "resumed"]


async def test_the_request_and_the_decision_are_recorded_as_events(
    make_tools: MakeTools, workspace: Path
) -> None:
    events: list[Event] = []
    person = Person(Deny(feedback="not now"))
    tools = make_tools(before_call=_gate(person, workspace, events=events))

    await call(tools, "run_shell", command="make clean")

    requested, decided = events
    assert isinstance(requested, ToolApprovalRequested)
    assert (requested.tool, requested.subject) == ("run_shell", "make clean")
    assert isinstance(decided, ToolApprovalDecided)
    assert (decided.outcome, decided.feedback) == (ApprovalOutcome.DENIED, "not now")
    assert requested.call_id == decided.call_id == "c1"


async def test_a_call_that_need_not_ask_records_nothing(
    make_tools: MakeTools, workspace: Path
) -> None:
    events: list[Event] = []
    tools = make_tools(before_call=_gate(Person(), workspace, PermissionMode.BYPASS, events=events))

    await call(tools, "write_file", path="a.txt", content="1")

    assert events == []
