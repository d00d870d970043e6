"""An agent's tools with a way to reach the user: ``ask_user``, or ``record_assumption``.

Who may ask: a single-agent run's agent and the presenter get ``ask_user``, which waits for
the run's :class:`~actors.human.desk.QuestionDesk` and returns the answer as the call's
result. The agents of a multi-agent answer round get ``record_assumption`` instead (N agents
must not flood the user): the assumption is recorded and the agent goes on. A run without a
desk (questions off) offers neither. Every other call goes to the agent's own tools.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from conclave.actors.agent.memory import AgentSetup
from conclave.actors.human.desk import QuestionDesk, Recorder
from conclave.actors.human.questions import (
    ASK_USER,
    ASSUMED_INSTEAD,
    NO_DEFAULT,
    RECORD_ASSUMPTION,
    Assumption,
    Question,
    Reply,
    parse_assumption,
    parse_question,
    question_in_text,
    reply_text,
)
from conclave.actors.llm.protocol import ChatMessage, ToolCall, ToolSchema
from conclave.actors.loop.terminals import Final, Proceed, Terminal, Violation
from conclave.actors.prompts.modes import Reach
from conclave.actors.tools.arguments import ArgumentError
from conclave.actors.tools.protocol import ToolExecutor, ToolResult
from conclave.config.modes import CollaborationMode
from conclave.runtime import ActorContext

__all__ = [
    "AskingTerminal",
    "AskingTools",
    "answer_message",
    "may_ask",
    "own_tools",
    "reach",
]

T = TypeVar("T")


class AskingTools:
    """``tools`` plus ``ask_user`` (``may_ask``) or ``record_assumption`` (not)."""

    def __init__(
        self,
        tools: ToolExecutor,
        desk: QuestionDesk,
        *,
        agent: str,
        may_ask: bool,
        record: Recorder,
    ) -> None:
        self._tools = tools
        self._desk = desk
        self._agent = agent
        self._record = record
        self._own = ASK_USER if may_ask else RECORD_ASSUMPTION

    def schemas(self) -> tuple[ToolSchema, ...]:
        return (*self._tools.schemas(), self._own)

    def withheld(self) -> tuple[ToolSchema, ...]:
        return self._tools.withheld()

    async def execute(self, call: ToolCall) -> ToolResult:
        if call.name != self._own.name:
            return await self._tools.execute(call)
        try:
            if self._own is ASK_USER:
                question = parse_question(call.arguments)
            else:
                assumption = parse_assumption(call.arguments)
        except ArgumentError as exc:
            return ToolResult(ok=False, error=str(exc), refused=True)
        if self._own is RECORD_ASSUMPTION:
            self._desk.assume(self._agent, assumption, self._record)
            return ToolResult(ok=True, output="Recorded. Go on with that assumption.")
        reply = await self.ask(question, call_id=call.id)
        return ToolResult(ok=True, output=reply_text(reply))

    @property
    def may_ask(self) -> bool:
        """Whether it offers ``ask_user`` (else ``record_assumption``)."""
        return self._own is ASK_USER

    def assume(self, question: Question) -> str:
        """Record, instead of asking, that the agent goes on with the safest course; what
        the model reads back (for a question not made through ``record_assumption``: a PAOR
        reflection's ``needs_user``)."""
        assumed = Assumption(question=question.question, assumption=NO_DEFAULT)
        self._desk.assume(self._agent, assumed, self._record)
        return ASSUMED_INSTEAD

    async def ask(self, question: Question, *, call_id: str = "") -> Reply:
        """Put ``question`` to the user through the desk (also for a question in text)."""
        return await self._desk.ask(self._agent, question, self._record, call_id=call_id)


class AskingTerminal(Generic[T]):
    """``inner``, except that a reply without tool calls whose text is an ``ask_user`` JSON
    object is final with that :class:`Question` (a model without tool use asking): the
    caller asks it and goes on with the answer."""

    def __init__(self, inner: Terminal[T]) -> None:
        self._inner = inner

    def judge(
        self, reply: ChatMessage, offered: tuple[ToolSchema, ...]
    ) -> Final[T | Question] | Proceed | Violation:
        if not reply.tool_calls and any(t.name == ASK_USER.name for t in offered):
            question = question_in_text(reply.content)
            if question is not None:
                return Final(value=question)
        verdict = self._inner.judge(reply, offered)
        if isinstance(verdict, Final):
            return Final(value=verdict.value)
        return verdict


def answer_message(reply: Reply) -> ChatMessage:
    """The user message that answers a question asked in text."""
    return ChatMessage(role="user", content=reply_text(reply))


def may_ask(setup: AgentSetup, *, presenting: bool) -> bool:
    """Who may ask the user: a single agent and the presenter, never in execute mode
    (which works autonomously). The agents of a multi-agent round assume instead: N of them
    must not flood the user."""
    if setup.mode is CollaborationMode.EXECUTE:
        return False
    return presenting or setup.agents == 1


def reach(setup: AgentSetup, *, presenting: bool) -> Reach | None:
    """How the prompt says the agent may reach the user; ``None``: it is not acting (no
    approved plan, questions off), and the prompt has no Act section."""
    if setup.questions is not None:
        return Reach.ASK if may_ask(setup, presenting=presenting) else Reach.ASSUME
    return Reach.NONE if setup.executing_plan else None


def own_tools(setup: AgentSetup, context: ActorContext, *, presenting: bool) -> ToolExecutor:
    """The agent's tools, with ``ask_user`` or ``record_assumption`` when the run takes
    questions."""
    if setup.questions is None:
        return setup.tools
    return AskingTools(
        setup.tools,
        setup.questions,
        agent=setup.agent,
        may_ask=may_ask(setup, presenting=presenting),
        record=context.record,
    )
