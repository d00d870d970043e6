"""The coordinator's state machine, free of I/O: answers, votes, exclusions, the winner.

The :class:`~actors.coordination.coordinator.Coordinator` actor feeds it messages and
carries out what it decides. The state object is created by the run, not by the actor, so
it survives a coordinator restart and the run driver can read the best answer so far on
timeout or Ctrl+C. Every duty the coordinator has in flight lives here too (the pending
presentation, the result waiters, the override window as a phase), so a restarted
coordinator re-arms it.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Sequence

import attrs

from conclave.actors.coordination.label import Label, anonymous_id
from conclave.actors.coordination.protocol import AnswerView, Present, SameAnswer
from conclave.actors.coordination.visibility import Visibility
from conclave.config.schema import OrchestratorConfig
from conclave.runtime import Envelope

__all__ = [
    "Accepted",
    "Answer",
    "AnswerOutcome",
    "CoordinationState",
    "Exclusion",
    "PendingPresentation",
    "Phase",
    "Winner",
]


class Phase(enum.Enum):
    COORDINATING = "coordinating"
    AWAITING_OVERRIDE = "awaiting_override"
    PRESENTING = "presenting"
    DONE = "done"


@attrs.frozen(kw_only=True)
class Answer:
    label: str
    agent: str
    content: str


@attrs.frozen(kw_only=True)
class AnswerOutcome:
    answer: Answer | None
    """The new answer, if the submission was taken as one."""
    error: str | None
    cleared_voters: tuple[str, ...] = ()
    """Whose votes the answer cleared: those of the agents shown it, its author's own
    included (an author that answers again is no longer done)."""
    same_as: Answer | None = None
    """The submission's text was that of this current answer: no answer was added (see
    :meth:`CoordinationState.submit_answer`); ``counted`` says what it counted as."""
    counted: SameAnswer | None = None


@attrs.frozen(kw_only=True)
class Exclusion:
    """What excluding an agent changed."""

    withdrawn_vote: str | None
    """The label it had voted for, which no longer counts; ``None`` if it held no vote, or
    coordination was over (the votes that decided it stand)."""


@attrs.frozen(kw_only=True)
class Winner:
    agent: str
    label: str
    tally: dict[str, int]


@attrs.frozen(kw_only=True)
class Accepted:
    """An agent's latest accepted submission: which round, which label, and whether it was
    a vote (for that label) or an answer (labelled so)."""

    round: int
    label: str
    vote: bool
    same: SameAnswer | None = None
    """Set when it was an answer the same as the answer ``label``: what it counted as."""


@attrs.define(kw_only=True)
class PendingPresentation:
    """The presentation the coordinator is waiting for; a restarted coordinator re-sends it."""

    presenter: str
    request: Present
    fallback: Answer
    """The answer that stands if the presentation fails: the chosen answer, verbatim."""
    sent: int = 0
    """How many times the request was sent; only the latest sending's failure counts."""
    interrupted: int = 0
    """Sendings that failed because the presenter's incarnation ended (it crashed)."""
    failing_since: float | None = None
    """Since when the presenter's calls keep failing (its grace began); ``None`` while
    they do not."""


class CoordinationState:
    def __init__(
        self, *, task: str, agents: Sequence[str], orchestrator: OrchestratorConfig
    ) -> None:
        self.task = task
        self.agents = list(agents)
        self.orchestrator = orchestrator
        self.visibility = Visibility(
            orchestrator.visibility, self.agents, isolated=orchestrator.disable_injection
        )
        self.anonymous = {a: anonymous_id(i + 1) for i, a in enumerate(sorted(self.agents))}
        self._by_anonymous = {anon: a for a, anon in self.anonymous.items()}
        self.answers: list[Answer] = []
        self.order_of: dict[str, int] = {}
        """Label → its place in ``answers`` (1 is the first): the order prompts show."""
        self.latest: dict[str, Answer] = {}
        self._answer_counts: Counter[str] = Counter()
        self._current: dict[str, list[Answer]] = {}
        """Text (stripped) → the current answers (each author's latest) with that text,
        in the order they were accepted: what a submission duplicates."""
        self.supporters: set[str] = set()
        """Agents that gave a current answer's text as their own (it counted as their vote,
        or as their part): as :meth:`voting_opened` says, they may vote from then on, as
        answerers may."""
        self._answers_seen: Counter[str] = Counter()
        """Per agent, how many answers (all versions) it can see: what a vote must cite."""
        self.votes: dict[str, Answer] = {}
        self.vote_reasons: dict[str, str] = {}
        self.live: dict[str, None] = dict.fromkeys(self.agents)
        """The agents not excluded, in config order: an ordered set, because every answer and
        vote asks whether its agent is live (a list made that O(N), a run O(N²))."""
        self.failed: dict[str, str] = {}
        self.failing: dict[str, str] = {}
        """Agent → the latest failure of its LLM calls, while they keep failing."""
        self.failing_since: float | None = None
        """When every other agent was last found done while some kept failing: their grace
        runs from here (``None``: no grace is running)."""
        self.phase = Phase.COORDINATING
        self.started = False
        self.resumed = False
        """Restored from a paused run (:mod:`actors.coordination.restore`): the coordinator
        goes on from it rather than starting the task."""
        self.winner: Winner | None = None
        self.presenter: str | None = None
        self.overridden = False
        """A human chose the presenter in the override window."""
        self.final_answer: str | None = None
        self.presentation_error: str | None = None
        self.failure_reason: str | None = None
        """Why coordination ended without a final answer."""
        self.result_waiters: list[Envelope] = []
        """Pending ``AwaitResult`` requests; kept here so a coordinator restart keeps them."""
        self.presentation: PendingPresentation | None = None
        self.accepted_rounds: dict[str, Accepted] = {}
        """Agent → its latest accepted submission: an agent that crashed while submitting
        re-submits the same round and gets the same verdict, not a second answer (or a
        duplicate-answer error)."""

    # -- inputs -------------------------------------------------------------------------

    def submit_answer(self, agent: str, content: str, shown: Sequence[str]) -> AnswerOutcome:
        """Take ``content`` as ``agent``'s new answer, or as the same as a current one.

        An answer whose text (stripped) is that of a current answer the agent can see (its
        own included) adds nothing to choose from: it is the agent saying that answer is
        right. A deterministic model gives every agent the same first answer; refusing the
        copies excluded all but one agent, and making each vote in a retry would cost a
        call per agent to say what its answer already said. So it counts as the agent's
        vote for that answer, with no further call, if the agent was shown (``shown``, the
        labels its round showed) every other answer it can see: then its vote is as
        informed as a vote. If not, it counts as the agent's part, as an answer of its own
        would, and the agent votes next, having seen them all. With voting skipped there is
        no vote to count it as: it is taken as a new answer."""
        if self.phase is not Phase.COORDINATING:
            return AnswerOutcome(
                answer=None, error="Coordination is over; no more answers are accepted."
            )
        if agent not in self.live:
            return AnswerOutcome(answer=None, error=f"{agent} is not a live agent in this run.")
        key = content.strip()
        same = self._same_as(agent, key)
        if same is not None and not self.orchestrator.skip_voting:
            return self._same_answer(agent, same, shown)
        cap = self.orchestrator.max_new_answers_per_agent
        if cap is not None and self._answer_counts[agent] >= cap:
            advice = "call vote instead" if self.voting_opened(agent) else "wait for the others"
            return AnswerOutcome(
                answer=None,
                error=f"You have given the maximum of {cap} answer(s); {advice}.",
            )
        self._answer_counts[agent] += 1
        answer = Answer(
            label=str(Label.of(self.anonymous[agent], self._answer_counts[agent])),
            agent=agent,
            content=content,
        )
        self.answers.append(answer)
        self.order_of[answer.label] = len(self.answers)
        previous = self.latest.get(agent)
        if previous is not None:
            self._forget_current(previous)
        self.latest[agent] = answer
        self._current.setdefault(key, []).append(answer)
        visibility = self.visibility
        if not visibility.everyone:
            for viewer in (agent, *visibility.peers(agent)):
                self._answers_seen[viewer] += 1
        # Only the agents shown this answer (its author among them) have a reason to look
        # again: a vote elsewhere stands (it could not be for this author, whom its voter
        # cannot see). Asked of the few agents shown it, not of every vote: a late answer
        # among ten thousand votes would otherwise walk them all.
        if visibility.everyone:
            cleared = tuple(self.votes)
        else:
            cleared = tuple(v for v in visibility.audience(agent) if v in self.votes)
        for voter in cleared:
            self._drop_vote(voter)
        return AnswerOutcome(answer=answer, error=None, cleared_voters=cleared)

    def _same_as(self, agent: str, key: str) -> Answer | None:
        """The first accepted of the current answers with text ``key`` that ``agent`` can
        see (its own latest included); ``None`` if there is none."""
        for answer in self._current.get(key, ()):
            if self.visibility.sees(agent, answer.agent):
                return answer
        return None

    def _forget_current(self, answer: Answer) -> None:
        key = answer.content.strip()
        same = self._current[key]
        same.remove(answer)
        if not same:
            del self._current[key]

    def _same_answer(self, agent: str, answer: Answer, shown: Sequence[str]) -> AnswerOutcome:
        self.supporters.add(agent)
        if not self._shown_all(agent, answer, shown):
            return AnswerOutcome(answer=None, error=None, same_as=answer, counted=SameAnswer.PART)
        self.votes[agent] = answer
        self.vote_reasons[agent] = (
            f"gave its answer {answer.label} again"
            if answer.agent == agent
            else f"gave the same answer as {answer.label}"
        )
        return AnswerOutcome(answer=None, error=None, same_as=answer, counted=SameAnswer.VOTE)

    def _shown_all(self, agent: str, answer: Answer, shown: Sequence[str]) -> bool:
        """Whether ``shown`` covers every answer ``agent`` can see, counted as
        :meth:`visible_answer_count` counts them (all versions): a label shown stands for
        its author's earlier versions too. The agent knows its own answers and ``answer``
        (it gave the same text), shown or not. Counts, not a walk over the visible answers:
        a submission costs what its prompt showed, not what the run holds."""
        versions: dict[str, int] = {}
        for text in shown:
            try:
                label = Label.parse(text)
            except ValueError:
                continue
            versions[label.author] = max(versions.get(label.author, 0), label.seq)
        own = self.anonymous[agent]
        versions[own] = max(versions.get(own, 0), self._answer_counts[agent])
        author = self.anonymous[answer.agent]
        versions[author] = max(versions.get(author, 0), Label.parse(answer.label).seq)
        known = 0
        for anonymous, seq in versions.items():
            writer = self._by_anonymous.get(anonymous)
            if writer is not None and self.visibility.sees(agent, writer):
                known += min(seq, self._answer_counts[writer])
        return known >= self.visible_answer_count(agent)

    def submit_vote(
        self, agent: str, target: str, reason: str, seen: int
    ) -> tuple[Answer | None, str | None, bool]:
        """Returns (voted-for answer, error, stale)."""
        if self.phase is not Phase.COORDINATING:
            return None, "Coordination is over; no more votes are accepted.", False
        if agent not in self.live:
            return None, f"{agent} is not a live agent in this run.", False
        if self.orchestrator.skip_voting:
            return None, "Voting is disabled in this run; call new_answer.", False
        author = self._by_anonymous.get(target)
        if author is None or author not in self.latest or not self.visibility.sees(agent, author):
            shown = sorted(self.anonymous[a] for a in self.latest if self.visibility.sees(agent, a))
            if author is not None and author in self.latest:
                problem = f"{target}'s answer was never shown to you"
            else:
                problem = f"{target!r} has no answer to vote for"
            return (
                None,
                f"{problem}; vote for one of the answers you were shown: "
                f"{', '.join(shown) or 'none'}.",
                False,
            )
        if seen < self.visible_answer_count(agent):
            return None, "Newer answers exist; look at them before voting.", True
        answer = self.latest[author]
        self.votes[agent] = answer
        self.vote_reasons[agent] = reason
        return answer, None, False

    def fail(self, agent: str, reason: str) -> Exclusion | None:
        """Exclude ``agent``; ``None`` (and nothing changes) if it is not live in this run.

        While agents still vote, an excluded agent's vote stops counting (voting completes
        once every *live* agent has voted). Once coordination is over its vote stands: the
        run's votes are those that decided it."""
        if agent not in self.live:
            return None
        self.failed[agent] = reason
        del self.live[agent]
        self.failing.pop(agent, None)
        vote = self.votes.get(agent)
        if vote is None or self.phase is not Phase.COORDINATING:
            return Exclusion(withdrawn_vote=None)
        self._drop_vote(agent)
        return Exclusion(withdrawn_vote=vote.label)

    def _drop_vote(self, agent: str) -> None:
        self.votes.pop(agent, None)
        self.vote_reasons.pop(agent, None)

    def halt(self) -> None:
        """The run ended before coordination did (timeout, Ctrl+C, failure): from now on
        no answer or vote is accepted and nothing more is decided.

        The run's handle calls it, synchronously, as it takes the run's result: a message to
        the coordinator would be handled only after that moment, and what it accepted in
        between would be missing from the result. Every other transition is the
        coordinator's."""
        self.phase = Phase.DONE

    # -- queries ------------------------------------------------------------------------

    def knows(self, agent: str) -> bool:
        return agent in self.anonymous

    def voting_opened(self, agent: str) -> bool:
        """Whether the coordinator has told ``agent`` it may vote: it does so with every
        answer of the agent it accepts (and every answer it counts as the agent's vote),
        unless the run skips voting."""
        return not self.orchestrator.skip_voting and (
            agent in self.latest or agent in self.supporters
        )

    def visible_answer_count(self, agent: str) -> int:
        if self.visibility.everyone:
            return len(self.answers)
        return self._answers_seen[agent]

    def snapshot_for(self, agent: str) -> tuple[AnswerView, ...]:
        """Latest answer of every agent ``agent`` can see, itself included, in anonymous order.

        With injection disabled that is its own answer only: agents work independently."""
        authors = [agent, *self.visibility.peers(agent)]
        shown = [self.latest[a] for a in authors if a in self.latest]
        shown.sort(key=lambda a: self.anonymous[a.agent])
        return tuple(self.view_of(a) for a in shown)

    def view_of(self, answer: Answer) -> AnswerView:
        """``answer`` as an agent is shown it, whole."""
        return AnswerView(
            label=answer.label, content=answer.content, order=self.order_of[answer.label]
        )

    def coordination_done(self) -> bool:
        if not self.live:
            return True
        if self.orchestrator.skip_voting:
            return len(self.latest) >= len(self.live) and all(a in self.latest for a in self.live)
        # While coordinating only live agents hold votes (``fail`` drops one), so counting
        # suffices.
        return len(self.votes) == len(self.live)

    def settled(self, agent: str) -> bool:
        """Whether ``agent`` has nothing to do until others act: its vote stands, or it has
        answered and voting is skipped, deferred until every agent has answered, or its
        first vote waits for the first answers of live agents still answering."""
        if agent in self.votes:
            return True
        orchestrator = self.orchestrator
        deferred = orchestrator.skip_voting or orchestrator.defer_voting_until_all_answered
        waiting = orchestrator.first_vote_wait is not None and any(
            a not in self.latest and a not in self.supporters for a in self.live
        )
        return (deferred or waiting) and agent in self.latest

    def stragglers(self) -> tuple[str, ...]:
        """The live agents whose calls keep failing while every other live agent (one at
        least) is done; empty when the run is waiting for anyone else."""
        if self.phase is not Phase.COORDINATING or not self.failing:
            # Checked after every answer and vote: with nobody failing (the usual case) it
            # must not walk every agent, or a run of N agents costs N² here.
            return ()
        failing = tuple(a for a in self.live if a in self.failing)
        others = [a for a in self.live if a not in self.failing]
        if not failing or not others or not all(self.settled(a) for a in others):
            return ()
        return failing

    def choose_winner(self) -> Winner | None:
        """Most votes; ties to the agent listed first in the config; no votes: first answerer."""
        if not self.answers:
            return None
        tally: Counter[str] = Counter(answer.agent for answer in self.votes.values())
        labels = {self.latest[a].label: n for a, n in tally.items()}
        if tally:
            top = max(tally.values())
            agent = next(a for a in self.agents if tally.get(a) == top)
        else:
            agent = self.answers[0].agent
        return Winner(agent=agent, label=self.latest[agent].label, tally=labels)

    def replacement_presenter(self) -> str | None:
        """A live agent to present in place of an excluded winner: the one whose answer has
        most votes, ties to config order; ``None`` if no live agent has an answer."""
        tally: Counter[str] = Counter(answer.agent for answer in self.votes.values())
        live = set(self.live)
        candidates = [
            (tally[a], -i, a) for i, a in enumerate(self.agents) if a in self.latest and a in live
        ]
        return max(candidates)[2] if candidates else None

    def best_so_far(self) -> Answer | None:
        """For timeouts and cancellation: most votes, else the newest answer."""
        if self.votes:
            winner = self.choose_winner()
            assert winner is not None
            return self.latest[winner.agent]
        return self.answers[-1] if self.answers else None
