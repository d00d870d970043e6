"""What passes between a PAOR agent and its sub-agents, and what the log records of them."""

from __future__ import annotations

from conclave.actors.events.base import DomainEvent
from conclave.actors.paor.budget import Budget, SubAgentReport
from conclave.actors.paor.plan import SubAgentKind
from conclave.actors.paor.report import PaorEnd
from conclave.actors.paor.subagent_paths import SEPARATOR, agent_of, is_subagent
from conclave.runtime import Message, message

__all__ = [
    "SEPARATOR",
    "RunSubTask",
    "SubAgentFinished",
    "SubAgentStarted",
    "SubTaskDone",
    "agent_of",
    "is_subagent",
]


@message(kind="paor_run_sub_task")
class RunSubTask(Message):
    """Asks a sub-agent to carry out its step; it answers :class:`SubTaskDone`."""

    step: str
    agent_kind: SubAgentKind
    task: str
    context: str = ""
    """What the steps it depends on found (their sub-agents' summaries)."""
    depth: int
    """Its depth: 1 for an agent's own sub-agents; it may delegate while below
    ``paor.max_depth``."""
    budget: Budget


@message(kind="paor_sub_task_done")
class SubTaskDone(Message):
    report: SubAgentReport


@message()
class SubAgentStarted(DomainEvent):
    agent: str
    """The run's agent whose round it serves."""
    subagent: str
    """Its path (``worker/1.2``: the agent, then iteration.step for each level)."""
    agent_kind: SubAgentKind
    step: str
    task: str
    tokens: int | None
    """Its share of tokens; ``None``: no limit."""
    seconds: float | None
    """Its share of wall time; ``None``: no limit."""


@message()
class SubAgentFinished(DomainEvent):
    agent: str
    subagent: str
    agent_kind: SubAgentKind
    step: str
    end: PaorEnd | None
    """How its round ended; ``None``: it crashed again after its restart (reported)."""
    summary: str
    tokens: int
    """It and its own sub-agents used."""
    seconds: float
    crashes: int
