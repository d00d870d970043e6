"""What an agent is told at the start (:class:`AgentSetup`) and what it knows
(:class:`AgentMemory`, owned by the run so that it survives a crash of the actor)."""

from __future__ import annotations

from collections.abc import Callable

import attrs
import trio

from conclave.actors.agent.resume import ResumePoint
from conclave.actors.agent.status import AgentStatus
from conclave.actors.agent.transcript_log import TranscriptFile, TranscriptLog
from conclave.actors.coordination.label import Label
from conclave.actors.coordination.protocol import AnswerView, SubmitAnswer, SubmitVote
from conclave.actors.human.desk import QuestionDesk
from conclave.actors.loop import Transcript
from conclave.actors.paor.corrections import Corrections
from conclave.actors.run.turn import Turn
from conclave.actors.tools.protocol import NO_TOOLS, ToolExecutor
from conclave.actors.workspace.grants import AgentWorkspace
from conclave.config.modes import CollaborationMode
from conclave.config.schema import LoopKind, OrchestratorConfig, PaorConfig
from conclave.runtime import ActorFactory, Address

__all__ = ["AgentMemory", "AgentSetup", "AgentStatus"]


@attrs.frozen(kw_only=True)
class AgentSetup:
    agent: str
    anonymous_id: str
    agents: int
    persona: str
    coordinator: Address
    orchestrator: OrchestratorConfig
    """Its budgets: ``call_timeout`` bounds each LLM call, ``max_tries_per_round`` the failed
    tries of a round or a presentation."""
    history: tuple[Turn, ...] = ()
    """Earlier turns of the conversation, shown before the task in every prompt."""
    transcript: TranscriptFile | None = None
    """Where the agent's transcripts go (``<log_dir>/transcripts.jsonl``, shared by the run's
    agents, each line naming its agent); ``None``: nowhere."""
    tools: ToolExecutor = NO_TOOLS
    """The agent's own tools, offered in every round beside the workflow tools. A round with
    tools follows the ``inject`` in-flight policy (see :mod:`actors.agent.policy`)."""
    subagent_wrap: Callable[[ActorFactory], ActorFactory] | None = None
    """Wraps the factory of each of its PAOR sub-agents (the run's fault plan, if any)."""
    workspace: AgentWorkspace | None = None
    """Where the agent works on files and what its tools may reach (owned by the run);
    ``None`` when it has no tools. Answers shown to the agent go through it, so their
    snapshots become readable; an answer's workspace is staged before it is submitted."""
    mode: CollaborationMode = CollaborationMode.DEFAULT
    """The run's collaboration mode (plan, execute or neither): it chooses the agent's tools
    and the prefix of its system messages."""
    instructions: str = ""
    """The agent's configured ``system_prompt``, added after Conclave's own rules."""
    executing_plan: bool = False
    """The task is an approved plan to carry out: the prompt carries the Act section."""
    questions: QuestionDesk | None = None
    """Where the agent's questions go (the run's one desk); ``None``: questions are off and
    the agent is offered neither ``ask_user`` nor ``record_assumption``."""
    loop: LoopKind = LoopKind.FREE
    """How its answer rounds run (``paor``: :mod:`actors.agent.paor_round`)."""
    paor: PaorConfig = attrs.Factory(PaorConfig)
    corrections: Corrections | None = None
    """The run's box of the user's corrections (a PAOR round takes its own from it)."""
    halted: trio.Event = attrs.Factory(trio.Event)
    """Set when the run ends before coordination did (timeout, Ctrl+C, failure): start
    nothing new, whatever arrives (mail queued before the run's ``StopWork``, or a start
    that comes only now). One per run, shared by its agents; the run's handle is its one
    writer (:attr:`~actors.run.handle.RunHandle.halted`)."""


@attrs.define
class AgentMemory:
    """What an agent knows. Owned by the run so it survives a crash of the actor."""

    task: str = ""
    view: dict[str, AnswerView] = attrs.Factory(dict)
    """Latest answer seen per anonymous author."""
    labels_seen: set[str] = attrs.Factory(set)
    snapshot_visible: int = 0
    answers_given: int = 0
    supported: bool = False
    """An answer of this agent was the same as a current answer (it counted as its vote,
    or as its part): it has taken part as an answerer has, so its later rounds may vote."""
    voting_open: bool = False
    status: AgentStatus = AgentStatus.IDLE
    round: int = 0
    generation: int = 0
    paor: bool = False
    """The round runs PAOR (:func:`~actors.agent.policy.runs_paor`): it follows
    ``inject``, tools or not (see :mod:`actors.agent.policy`)."""
    stale: bool = False
    """Answers arrived after this round's prompt was built (``finish``/``cancel`` rounds)."""
    prompt_built: bool = False
    committing: bool = False
    """The round's result went to the coordinator; from here on it is never cancelled."""
    vote_cleared: bool = False
    """A VotesReset came while a round was in flight: if that round settles as a vote, the
    reset was about that very vote (it overtook the round's RoundSettled), so vote again."""
    submission: SubmitAnswer | SubmitVote | None = None
    """The round's result while the coordinator's verdict on it is awaited."""
    transcript: Transcript | None = None
    """The round's transcript, from its prompt on: a restarted agent resumes the round from
    it (what its tools did is not done again)."""
    prompt_length: int = 0
    """How many of the transcript's first messages are its prompt (system, history, body)."""
    shown: set[str] = attrs.Factory(set)
    """Labels of the answers the round's transcript shows (its prompt's and injected ones)."""
    shortened: bool = False
    failing: bool = False
    """The coordinator was told this agent's calls fail, and not yet that one succeeded."""
    """The round already retried with shorter answer previews after a context overflow."""
    transcript_log: TranscriptLog | None = None
    """The agent's transcript file, once its first transcript is written."""
    resumed: ResumePoint | None = None
    """A paused run's round to go on with: the next fresh round starts from it, once."""

    def merge(self, answers: tuple[AnswerView, ...]) -> bool:
        """Take answers into the view (the newest per author, whole rather than cut);
        True if any label was new to this agent."""
        new = False
        for view in answers:
            label = Label.parse(view.label)
            current = self.view.get(label.author)
            if view.label not in self.labels_seen:
                self.labels_seen.add(view.label)
                new = True
            if (
                current is None
                or label.seq > Label.parse(current.label).seq
                or (current.label == view.label and current.truncated and not view.truncated)
            ):
                self.view[label.author] = view
        return new
