"""RunView: what a run looks like right now, reduced from its domain events.

The view is a reducer: :meth:`RunView.apply` folds one event into it, and its state is a
function of the events applied so far and of nothing else (no clock, no I/O, no access to
the actors). So the live view a UI builds from a hub subscription, the view a websocket
client rebuilds when it joins late, and the view replay builds from the event log are
equal whenever they have applied the same events. Ephemeral events (token deltas) never
reach the log, so they leave the view unchanged.

The per-agent records are frozen: a UI may keep one while the view moves on.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from conclave.actors.agent.events import (
    AgentStatusChanged,
    LlmRequestFinished,
    LlmRequestStarted,
    RoundRestarted,
    RoundStarted,
)
from conclave.actors.agent.status import STOPPED, AgentStatus
from conclave.actors.coordination.events import (
    AgentExcluded,
    AnswerAdded,
    FinalAnswerProduced,
    RunStarted,
    VoteAdded,
    VotesCleared,
    VotingComplete,
)
from conclave.actors.coordination.state import Answer
from conclave.actors.events.base import DomainEvent
from conclave.actors.events.loop import LlmRetry, LlmTryFailed, ToolCallFinished, ToolCallStarted
from conclave.actors.llm.protocol import CallOutcome
from conclave.actors.paor.events import PaorStateChanged
from conclave.actors.paor.state import PaorPhase
from conclave.actors.paor.subagent_events import (
    SubAgentFinished,
    SubAgentStarted,
    agent_of,
    is_subagent,
)
from conclave.actors.planning.progress import PlanExecutionStarted, PlanStepUpdated, StepProgress
from conclave.actors.run.events import RunEnded
from conclave.actors.run.termination import Termination
from conclave.config.schema import FinalAnswerStrategy
from conclave.config.wording import plural
from conclave.runtime import Event

__all__ = ["AgentView", "RunPhase", "RunView"]


class RunPhase(enum.Enum):
    STARTING = "starting"
    """No ``run_started`` yet."""
    COORDINATING = "coordinating"
    """Agents answer and vote."""
    VOTING_COMPLETE = "voting_complete"
    """A winner is chosen; the final answer is not out yet."""
    PRESENTING = "presenting"
    """An agent is writing the final answer."""
    FINISHED = "finished"
    """The final answer is out."""
    ENDED = "ended"
    """``run_ended``: nothing follows."""


@attrs.frozen(kw_only=True)
class AgentView:
    agent: str
    anonymous_id: str | None = None
    status: AgentStatus = AgentStatus.IDLE
    """The agent's last recorded status, or :attr:`AgentStatus.PRESENTED` once the final
    answer it presented is out."""
    round: int = 0
    started_at: float | None = None
    """When its first round started."""
    stopped_at: float | None = None
    """When it stopped (or was excluded, or the run ended); ``None`` while it works."""
    llm_calls: int = 0
    llm_retries: int = 0
    calls_without_usage: int = 0
    """Replies whose server reported no usage: its token counts are then unknown."""
    failed_tries: int = 0
    """Failed tries of its rounds and presentation, in all."""
    failing: str | None = None
    """Why its latest try failed, while its next try has not succeeded; ``None`` otherwise."""
    restarts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    """Of ``input_tokens``, those read from the provider's prompt cache."""
    model: str | None = None
    """The model its latest reply came from; ``None`` until a backend names one."""
    answer: str | None = None
    """The label of its latest answer."""
    vote: str | None = None
    """The label it votes for; ``None`` until it votes and after a new answer clears votes."""
    tool: str | None = None
    """The tool it is running now."""
    tool_calls: int = 0
    paor_phase: PaorPhase | None = None
    """The phase of its PAOR round (``loop: paor``); ``None`` for a free loop's agent."""
    paor_iteration: int = 0
    subagents: tuple[str, ...] = ()
    """The paths of its PAOR round's sub-agents running now, in the order they started."""
    excluded: str | None = None
    """Why it was excluded, if it was."""

    def paor_status(self) -> str | None:
        """``acting, iteration 2`` while a PAOR round is in a phase, with ``· 2 sub-agents
        running`` while its sub-agents work; ``None`` when the agent runs no PAOR round, or
        its round has ended."""
        phase = self.paor_phase
        if phase is None or phase in (PaorPhase.COMPLETE, PaorPhase.FAILED, PaorPhase.IDLE):
            return None
        status = f"{phase.value.replace('_', ' ')}, iteration {self.paor_iteration}"
        if self.subagents:
            status += f" · {plural(len(self.subagents), 'sub-agent')} running"
        return status

    def elapsed(self, now: float) -> float:
        """Seconds it has been working, as of ``now`` (a time on the run's clock)."""
        if self.started_at is None:
            return 0.0
        end = self.stopped_at if self.stopped_at is not None else now
        return max(0.0, end - self.started_at)


@attrs.define(kw_only=True)
class RunView:
    """The run as of the events applied so far; compare two views with ``==``."""

    task: str = ""
    strategy: FinalAnswerStrategy | None = None
    phase: RunPhase = RunPhase.STARTING
    started_at: float | None = None
    now: float | None = None
    """The time of the latest event applied: the view's notion of "now"."""
    agents: dict[str, AgentView] = attrs.Factory(dict)
    """By agent id, in the order the run lists them."""
    answers: list[Answer] = attrs.Factory(list)
    votes: dict[str, str] = attrs.Factory(dict)
    """Voter → the label it votes for: the votes standing now."""
    winner: str | None = None
    winner_label: str | None = None
    tally: dict[str, int] = attrs.Factory(dict)
    presenter: str | None = None
    final_answer: str | None = None
    termination: Termination | None = None
    plan_steps: tuple[StepProgress, ...] = ()
    """While the run executes an approved plan: its steps, as the latest event left them."""

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> RunView:
        """The view after ``events`` (for example the events of a log); other events, such
        as the kernel's, are skipped."""
        view = cls()
        for event in events:
            view.apply(event)
        return view

    @property
    def elapsed(self) -> float:
        if self.started_at is None or self.now is None:
            return 0.0
        return self.now - self.started_at

    def apply(self, event: Event) -> None:
        """Fold ``event`` into the view. Events the view does not know, and ephemeral ones,
        change nothing."""
        step = _STEPS.get(type(event))
        if step is None:
            return
        assert isinstance(event, DomainEvent)
        self.now = event.at
        step(self, event)

    # ------------------------------------------------------------------ helpers

    def _agent(self, agent: str) -> AgentView:
        view = self.agents.get(agent)
        if view is None:
            view = self.agents[agent] = AgentView(agent=agent)
        return view

    def _update(self, agent: str, **changes: Any) -> None:
        self.agents[agent] = attrs.evolve(self._agent(agent), **changes)

    # ------------------------------------------------------------------ steps

    def _run_started(self, event: RunStarted) -> None:
        self.task = event.task
        self.strategy = event.strategy
        self.phase = RunPhase.COORDINATING
        self.started_at = event.at
        for agent, anonymous in zip(event.agents, event.anonymous_ids, strict=False):
            self._update(agent, anonymous_id=anonymous)

    def _round_started(self, event: RoundStarted) -> None:
        agent = self._agent(event.agent)
        self.agents[event.agent] = attrs.evolve(
            agent,
            status=AgentStatus.WORKING,
            round=event.round,
            started_at=_first(agent.started_at, event.at),
            stopped_at=None,
            tool=None,
        )

    def _round_restarted(self, event: RoundRestarted) -> None:
        self._update(event.agent, restarts=self._agent(event.agent).restarts + 1)

    def _status_changed(self, event: AgentStatusChanged) -> None:
        agent = self._agent(event.agent)
        stopped = event.status in STOPPED
        self.agents[event.agent] = attrs.evolve(
            agent,
            status=event.status,
            stopped_at=_first(agent.stopped_at, event.at) if stopped else None,
            tool=None if stopped else agent.tool,
        )
        if event.status is AgentStatus.PRESENTING and self.phase is not RunPhase.ENDED:
            self.phase = RunPhase.PRESENTING
            self.presenter = event.agent

    def _llm_started(self, event: LlmRequestStarted) -> None:
        name = agent_of(event.agent)  # a sub-agent's calls are counted as its agent's
        self._update(name, llm_calls=self._agent(name).llm_calls + 1)

    def _llm_finished(self, event: LlmRequestFinished) -> None:
        name = agent_of(event.agent)
        agent = self._agent(name)
        self.agents[name] = attrs.evolve(
            agent,
            input_tokens=agent.input_tokens + event.input_tokens,
            output_tokens=agent.output_tokens + event.output_tokens,
            cache_read_tokens=agent.cache_read_tokens + event.cache_read_tokens,
            model=event.model or agent.model,
            failing=None if event.outcome is CallOutcome.OK else agent.failing,
            calls_without_usage=agent.calls_without_usage + (not event.usage_reported),
        )

    def _llm_retry(self, event: LlmRetry) -> None:
        name = agent_of(event.agent)
        self._update(name, llm_retries=self._agent(name).llm_retries + 1)

    def _try_failed(self, event: LlmTryFailed) -> None:
        name = agent_of(event.agent)
        self._update(name, failed_tries=self._agent(name).failed_tries + 1, failing=event.error)

    def _tool_started(self, event: ToolCallStarted) -> None:
        if not is_subagent(event.agent):  # a sub-agent's call is not what its agent runs
            self._update(event.agent, tool=event.tool)

    def _tool_finished(self, event: ToolCallFinished) -> None:
        if is_subagent(event.agent):  # counted as its agent's: the row is the agent's
            name = agent_of(event.agent)
            self._update(name, tool_calls=self._agent(name).tool_calls + 1)
            return
        agent = self._agent(event.agent)
        self.agents[event.agent] = attrs.evolve(agent, tool=None, tool_calls=agent.tool_calls + 1)

    def _subagent_started(self, event: SubAgentStarted) -> None:
        running = self._agent(event.agent).subagents
        self._update(event.agent, subagents=(*running, event.subagent))

    def _subagent_finished(self, event: SubAgentFinished) -> None:
        running = self._agent(event.agent).subagents
        self._update(event.agent, subagents=tuple(p for p in running if p != event.subagent))

    def _paor_moved(self, event: PaorStateChanged) -> None:
        # Sub-agents run only while their agent acts: none is left once it moves on (a
        # cancelled round's record no sub_agent_finished).
        running = self._agent(event.agent).subagents if event.target is PaorPhase.ACTING else ()
        self._update(
            event.agent,
            paor_phase=event.target,
            paor_iteration=event.iteration,
            subagents=running,
        )

    def _answer_added(self, event: AnswerAdded) -> None:
        self.answers.append(Answer(label=event.label, agent=event.agent, content=event.content))
        self._update(event.agent, answer=event.label)

    def _votes_cleared(self, event: VotesCleared) -> None:
        # A log written before ``voters`` existed does not say whose: its readers always
        # took every standing vote (see VotesCleared.voters).
        voters = tuple(self.votes) if event.voters is None else event.voters
        for voter in voters:
            if self.votes.pop(voter, None) is not None:
                self._update(voter, vote=None)

    def _vote_added(self, event: VoteAdded) -> None:
        self.votes[event.voter] = event.label
        self._update(event.voter, vote=event.label)

    def _agent_excluded(self, event: AgentExcluded) -> None:
        agent = self._agent(event.agent)
        withdrawn = event.withdrawn_vote is not None
        self.agents[event.agent] = attrs.evolve(
            agent,
            status=AgentStatus.EXCLUDED,
            excluded=event.reason,
            vote=None if withdrawn else agent.vote,
            tool=None,
            stopped_at=_first(agent.stopped_at, event.at),
        )
        if withdrawn:
            self.votes.pop(event.agent, None)

    def _voting_complete(self, event: VotingComplete) -> None:
        self.winner = event.winner
        self.winner_label = event.label
        self.tally = dict(event.tally)
        self.presenter = event.winner
        if self.phase is RunPhase.COORDINATING:
            self.phase = RunPhase.VOTING_COMPLETE

    def _final_answer(self, event: FinalAnswerProduced) -> None:
        self.final_answer = event.content
        self.presenter = event.presenter
        if self.phase is not RunPhase.ENDED:
            self.phase = RunPhase.FINISHED
        presenter = self.agents.get(event.presenter or "")
        if presenter is not None and presenter.status is AgentStatus.PRESENTING:
            self.agents[presenter.agent] = attrs.evolve(
                presenter, status=AgentStatus.PRESENTED, stopped_at=event.at
            )

    def _plan_steps(self, event: PlanExecutionStarted | PlanStepUpdated) -> None:
        self.plan_steps = event.steps

    def _run_ended(self, event: RunEnded) -> None:
        self.phase = RunPhase.ENDED
        self.termination = event.termination
        if event.winner is not None:
            self.winner = event.winner
        if event.final_answer is not None:
            self.final_answer = event.final_answer
        for name, agent in self.agents.items():
            if agent.stopped_at is None and agent.started_at is not None:
                self.agents[name] = attrs.evolve(agent, stopped_at=event.at, tool=None)


def _first(earlier: float | None, now: float) -> float:
    return now if earlier is None else earlier


_STEPS: dict[type[Event], Callable[[RunView, Any], None]] = {
    RunStarted: RunView._run_started,
    RoundStarted: RunView._round_started,
    RoundRestarted: RunView._round_restarted,
    AgentStatusChanged: RunView._status_changed,
    LlmRequestStarted: RunView._llm_started,
    LlmRequestFinished: RunView._llm_finished,
    LlmRetry: RunView._llm_retry,
    LlmTryFailed: RunView._try_failed,
    ToolCallStarted: RunView._tool_started,
    ToolCallFinished: RunView._tool_finished,
    AnswerAdded: RunView._answer_added,
    PaorStateChanged: RunView._paor_moved,
    SubAgentStarted: RunView._subagent_started,
    SubAgentFinished: RunView._subagent_finished,
    VoteAdded: RunView._vote_added,
    VotesCleared: RunView._votes_cleared,
    AgentExcluded: RunView._agent_excluded,
    VotingComplete: RunView._voting_complete,
    FinalAnswerProduced: RunView._final_answer,
    PlanExecutionStarted: RunView._plan_steps,
    PlanStepUpdated: RunView._plan_steps,
    RunEnded: RunView._run_ended,
}
"""One step per event class (exact class: a dict lookup per event, whatever the run size).
``text_delta`` needs none: it is ephemeral."""
