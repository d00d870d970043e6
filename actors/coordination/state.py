"""The coordinator's state machine, free of I/O: answers, votes, exclusions, the winner.

The :class:`~actors.coordinator.Coordinator` actor feeds it messages and carries out what it
decides. The state object is created by the run, not by the actor, so it survives a
coordinator restart and the run driver can read the best answer so far on timeout or Ctrl+C.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Sequence

import attrs

from actors.coordination.protocol import AnswerView
from actors.coordination.visibility import Visibility
from config.schema import OrchestratorConfig
from runtime import Envelope

__all__ = ["Answer", "AnswerOutcome", "CoordinationState", "Phase", "Winner"]


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
    error: str | None
    cleared_voters: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class Winner:
    agent: str
    label: str
    tally: dict[str, int]


class CoordinationState:
    def __init__(
        self, *, task: str, agents: Sequence[str], orchestrator: OrchestratorConfig
    ) -> None:
        self.task = task
        self.agents = list(agents)
        self.orchestrator = orchestrator
        self.visibility = Visibility(orchestrator.visibility, self.agents)
        self.anonymous = {a: f"agent{i + 1}" for i, a in enumerate(sorted(self.agents))}
        self._by_anonymous = {anon: a for a, anon in self.anonymous.items()}
        self.answers: list[Answer] = []
        self.latest: dict[str, Answer] = {}
        self._answer_counts: Counter[str] = Counter()
        self._contents: set[str] = set()
        self.votes: dict[str, Answer] = {}
        self.vote_reasons: dict[str, str] = {}
        self.live: list[str] = list(self.agents)
        self.failed: dict[str, str] = {}
        self.phase = Phase.COORDINATING
        self.started = False
        self.winner: Winner | None = None
        self.presenter: str | None = None
        self.overridden = False
        """A human chose the presenter in the override window."""
        self.final_answer: str | None = None
        self.presentation_error: str | None = None
        self.result_waiters: list[Envelope] = []
        """Pending ``AwaitResult`` requests; kept here so a coordinator restart keeps them."""

    # -- inputs -------------------------------------------------------------------------

    def submit_answer(self, agent: str, content: str) -> AnswerOutcome:
        if self.phase is not Phase.COORDINATING:
            return AnswerOutcome(
                answer=None, error="Coordination is over; no more answers are accepted."
            )
        if agent not in self.live:
            return AnswerOutcome(answer=None, error=f"{agent} is not a live agent in this run.")
        cap = self.orchestrator.max_new_answers_per_agent
        if cap is not None and self._answer_counts[agent] >= cap:
            return AnswerOutcome(
                answer=None,
                error=f"You have given the maximum of {cap} answer(s); call vote instead.",
            )
        key = content.strip()
        if key in self._contents:
            return AnswerOutcome(
                answer=None,
                error="That answer duplicates an existing answer exactly; write a different "
                "answer or vote for the existing one.",
            )
        self._answer_counts[agent] += 1
        answer = Answer(
            label=f"{self.anonymous[agent]}.{self._answer_counts[agent]}",
            agent=agent,
            content=content,
        )
        self.answers.append(answer)
        self.latest[agent] = answer
        self._contents.add(key)
        cleared = tuple(v for v in self.votes if v != agent)
        self.votes.clear()
        self.vote_reasons.clear()
        return AnswerOutcome(answer=answer, error=None, cleared_voters=cleared)

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
        if author is None or author not in self.latest:
            with_answers = ", ".join(sorted(self.anonymous[a] for a in self.latest)) or "none"
            return (
                None,
                (f"{target!r} has no answer to vote for; agents with answers: {with_answers}."),
                False,
            )
        if seen < self.visible_answer_count(agent):
            return None, "Newer answers exist; look at them before voting.", True
        answer = self.latest[author]
        self.votes[agent] = answer
        self.vote_reasons[agent] = reason
        return answer, None, False

    def fail(self, agent: str, reason: str) -> None:
        self.failed[agent] = reason
        if agent in self.live:
            self.live.remove(agent)
        self.votes.pop(agent, None)
        self.vote_reasons.pop(agent, None)

    # -- queries ------------------------------------------------------------------------

    def visible_answer_count(self, agent: str) -> int:
        if self.visibility.kind == "all":
            return len(self.answers)
        return self._answer_counts[agent] + sum(
            self._answer_counts[p] for p in self.visibility.peers(agent)
        )

    def snapshot_for(self, agent: str) -> tuple[AnswerView, ...]:
        """Latest answer of every agent ``agent`` can see, itself included, in anonymous order."""
        authors = [agent, *self.visibility.peers(agent)]
        shown = [self.latest[a] for a in authors if a in self.latest]
        shown.sort(key=lambda a: self.anonymous[a.agent])
        return tuple(AnswerView(label=a.label, content=a.content) for a in shown)

    def coordination_done(self) -> bool:
        if not self.live:
            return True
        if self.orchestrator.skip_voting:
            return len(self.latest) >= len(self.live) and all(a in self.latest for a in self.live)
        # Only live agents hold votes (``fail`` drops a vote), so counting suffices.
        return len(self.votes) == len(self.live)

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

    def best_so_far(self) -> Answer | None:
        """For timeouts and cancellation: most votes, else the newest answer."""
        if self.votes:
            winner = self.choose_winner()
            assert winner is not None
            return self.latest[winner.agent]
        return self.answers[-1] if self.answers else None
