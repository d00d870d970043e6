"""The coordination protocol: every message exchanged by agents, coordinator and bus.

Agents are named by their config id inside the runtime; the anonymous ids (``agent1``..)
and labels (``agent2.1``) are what the LLMs see.
"""

from __future__ import annotations

import enum

import attrs

from conclave.config.schema import FinalAnswerStrategy
from conclave.runtime import Message, message

__all__ = [
    "AgentFailed",
    "AgentFailing",
    "AnswerAccepted",
    "AnswerSupported",
    "AnswerUpdate",
    "AnswerVerdict",
    "AnswerView",
    "AnswersRequest",
    "AnswersSnapshot",
    "AwaitResult",
    "Continue",
    "ExcludeFailing",
    "OverrideChosen",
    "OverrideDecision",
    "Present",
    "Presentation",
    "PresentationDone",
    "PresenterGraceOver",
    "Rejoin",
    "Rejoined",
    "RunFinished",
    "SameAnswer",
    "StartTask",
    "StopWork",
    "SubmitAnswer",
    "SubmitVote",
    "VotesReset",
    "VotingOpen",
    "WrappedUp",
]


@message()
class AnswerView(Message):
    """One answer as an agent sees it: anonymous label and (possibly truncated) content."""

    label: str
    content: str
    truncated: bool = False
    workspace: str | None = None
    """Where the answer's workspace snapshot is (read-only for every agent shown the answer);
    ``None`` when agents have no workspaces. Filled in by the agent that is shown it."""
    order: int = 0
    """Its place among the run's answers in the order the coordinator accepted them (1 is
    the first): prompts show answers in this order, so a new one goes last and a cached
    prompt prefix stays valid. 0 where not known (a log written before this field existed)."""

    def cut(self, chars: int) -> AnswerView:
        """The answer as updates show it: cut to ``chars`` characters, marked when cut."""
        if len(self.content) <= chars:
            return self
        return attrs.evolve(self, content=self.content[:chars] + " …", truncated=True)


@message()
class StartTask(Message):
    task: str


@message()
class VotingOpen(Message):
    """ "You may vote now". Held by the defer-voting rule until every live agent answered."""


@message()
class VotesReset(Message):
    """A new answer cleared this agent's vote; it must look again."""


@message()
class StopWork(Message):
    """Coordination is over: cancel any round in flight and wait (maybe to present).
    With ``excluded``, the run goes on without this agent, for that reason."""

    excluded: str | None = None


@message()
class Present(Message):
    """Produce the final answer. ``answers`` holds what the presenter bases it on."""

    strategy: FinalAnswerStrategy
    task: str
    own_label: str
    answers: tuple[AnswerView, ...]
    write_access: bool = False
    """The presentation may write the writable context paths: the presenter opens them
    (grants, then its sandbox remounted rw) before it starts."""


@message()
class Presentation(Message):
    content: str | None
    error: str | None = None


@message()
class AnswersSnapshot(Message):
    answers: tuple[AnswerView, ...]
    visible: int
    """How many answers (all versions) exist that the asker can see; a vote cites it."""
    error: str | None = None
    """Set (and nothing shown) when the request named an agent this run does not have."""


@message()
class AnswerUpdate(Message):
    """New answers from other agents, previews truncated to the configured length."""

    answers: tuple[AnswerView, ...]


@message()
class SubmitAnswer(Message):
    agent: str
    content: str
    round: int
    """The agent's round number: submitting the same round again (after the agent crashed
    while waiting for the verdict) gets the verdict it was given, not a second answer."""
    shown: tuple[str, ...] = ()
    """The labels of the answers the round showed the agent: an answer the same as a
    current one counts as the agent's vote only if the agent was shown every answer it
    can see (see :class:`SameAnswer`). Empty in a log written before this field existed."""


class SameAnswer(enum.Enum):
    """What an answer counted as whose text was that of a current answer the agent can
    see (its own included): it adds nothing to choose from, so it is no new answer, and
    it costs the agent nothing (a deterministic model gives every agent the same one)."""

    VOTE = "vote"
    """The agent's vote for that answer: it had been shown every other answer it can see."""
    PART = "part"
    """The agent's part, as an answer of its own would be: it was not shown every answer it
    can see, so it votes next, in a round that shows them all."""


@message()
class SubmitVote(Message):
    agent: str
    target: str
    """Anonymous id of the agent voted for, e.g. ``agent2``."""
    reason: str
    seen: int
    """``visible`` of the snapshot the voter looked at; fewer than exist now means stale."""
    round: int
    """As for :class:`SubmitAnswer`: a repeated round gets the verdict it was given."""


@message()
class AnswerVerdict(Message):
    """Coordinator's reply to a submission: ``error`` says what to fix when rejected."""

    accepted: bool
    label: str | None = None
    error: str | None = None
    stale: bool = False
    """Rejected because newer answers exist that the voter has not seen (not a failed try)."""
    same: SameAnswer | None = None
    """Set when the submitted answer was the same as the current answer ``label``: no
    answer was added, and this says what it counted as."""
    order: int = 0
    """For an accepted answer (or one the same as ``label``): ``label``'s place in the order
    answers were accepted (see :attr:`AnswerView.order`)."""


@message()
class AnswersRequest(Message):
    agent: str


@message()
class Rejoin(Message):
    """Asked by a restarted agent: the one-way messages its predecessor was handling when it
    crashed were lost with it (a crash dead-letters the message being handled). The
    coordinator sends again, through the routing rules as the first time, what the agent
    must know: the task, its latest visible answers, "you may vote now" if it was told so,
    and "your vote was reset" if ``voted`` (the agent thinks its vote stands) is no longer
    true. Duplicates of these are harmless to the agent. Answered with :class:`Rejoined`."""

    agent: str
    voted: bool


@message()
class Rejoined(Message):
    """The coordinator has sent a rejoining agent what it must know."""


@message()
class AgentFailed(Message):
    agent: str
    reason: str


@message()
class AgentFailing(Message):
    """An agent's LLM calls fail (``error`` says the latest failure) or, with ``None``,
    succeed again: once every other agent is done, the run waits for agents that keep
    failing only so long (``orchestrator.failing_agent_grace``)."""

    agent: str
    error: str | None


@message()
class ExcludeFailing(Message):
    """The coordinator's own reminder: the grace of the agents that kept failing while the
    others were done is over (``since`` names which grace, so a stale one is ignored)."""

    since: float


@message()
class PresenterGraceOver(Message):
    """The coordinator's own reminder: the presenter's calls have kept failing for
    ``orchestrator.failing_agent_grace`` (``since`` names which grace, so a stale one, the
    presenter having recovered meanwhile, is ignored)."""

    since: float


@message()
class AnswerAccepted(Message):
    agent: str
    label: str
    content: str
    order: int = 0
    """Its place in the order answers were accepted (see :attr:`AnswerView.order`)."""


@message()
class AnswerSupported(Message):
    """``agent``'s answer was the same as the current answer ``label`` (see
    :class:`SameAnswer`). Told to the bus, which has nothing to send (no answer is new): it
    is routed so that the routing rules' observer counts the agent as one that has
    answered."""

    agent: str
    label: str


@message()
class AwaitResult(Message):
    """Asked by the run driver; answered with :class:`RunFinished` when the run ends."""


@message()
class RunFinished(Message):
    final_answer: str | None
    winner: str | None
    presenter: str | None


@message()
class OverrideDecision(Message):
    """A human picked the presenter during the override window."""

    presenter: str


@message()
class Continue(Message):
    """A human accepted the vote's winner during the override window."""


@message()
class OverrideChosen(Message):
    """The human gate decided the override window (the coordinator's background work tells
    the coordinator): ``presenter`` presents instead of the winner, ``None`` keeps it."""

    presenter: str | None


@message()
class PresentationDone(Message):
    """The presenter's reply (or the failure of the request) reached the coordinator's
    background task; ``sending`` numbers the request it answers."""

    sending: int
    content: str | None
    error: str | None = None
    interrupted: bool = False
    """The presenter's incarnation ended before it replied (it crashed): ask again."""


@message()
class WrappedUp(Message):
    """The coordinator's background work finished what follows the final answer (the
    writes diffed, the deliverable saved in ``final/``): the run may end."""
