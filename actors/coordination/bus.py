"""The InjectionBus: fans accepted answers out to the agents that can see them.

Bursts are coalesced here first: while more accepted answers are queued in the bus's own
mailbox, it only collects; when the mailbox runs dry it sends each recipient ONE update
holding every new answer for it. With a quiet period, it also collects while answers are
still arriving (the quiet fact is false), and sends once they go quiet: the
:class:`~actors.coordination.rules.HoldUntilQuiet` rule would hold every update until then
anyway, and released together they would reach each agent at the same moment. So a burst of
k answers is one update per recipient, not k held and released ones (50 agents all-to-all:
50 updates instead of 2,450, each held and released). Agents coalesce again on their side
(see AgentActor).

With a quiet period configured, the bus also keeps the ``answers_quiet`` fact that the
:class:`~actors.coordination.rules.HoldUntilQuiet` rule waits on. The fact turns false the
moment an answer is accepted (the :class:`AnswersArriving` observer sees the coordinator's
``AnswerAccepted`` as it is routed, before the resets and "you may vote now" that follow
it), and the bus turns it true once a period passes without one.

What the bus has in flight (updates not yet sent, the quiet deadline) is a
:class:`BusState` owned by the run: a restarted bus sends what its predecessor collected
and sleeps until the same deadline, so held messages are released as if nothing happened.

With a first-vote wait configured, the bus also keeps the ``first_vote_wait_over`` fact that
:class:`~actors.coordination.rules.FirstVoteWaitsForAnswers` bounds its hold with: it turns
true once the wait has passed since the run's first accepted answer.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import attrs
import trio

from conclave.actors.coordination.protocol import AnswerAccepted, AnswerUpdate, AnswerView
from conclave.actors.coordination.rules import FIRST_VOTE_WAIT_OVER, QUIET
from conclave.actors.coordination.visibility import Visibility
from conclave.runtime import Actor, ActorContext, Address, Envelope, Facts

__all__ = ["AnswersArriving", "BusState", "InjectionBus", "agent_address"]


@functools.lru_cache(maxsize=1 << 16)
def agent_address(agent: str) -> Address:
    """An agent's address. Cached: the coordinator and the bus send to the same agents
    again and again, and one address object keeps its hash (computed once) for every
    routing lookup, where a new one per message computed it anew."""
    return Address("agent", agent)


@attrs.define(kw_only=True)
class BusState:
    """The bus's work in flight, owned by the run so that it survives a crash of the bus."""

    quiet_deadline: float | None = None
    """When answers will have been quiet for a period; ``None`` while they are quiet (or
    when the run has no quiet period)."""
    pending: dict[str, list[AnswerView]] = attrs.Factory(dict)
    """Recipient → answers collected for its next update."""
    first_vote_deadline: float | None = None
    """When the first-vote wait ends: set by the run's first accepted answer (``None``
    before it, or when the run has no such wait)."""
    first_vote_wait_over: bool = False


class AnswersArriving:
    """Observer: an accepted answer ends the quiet (fact ``answers_quiet`` false) and moves
    the quiet deadline one period ahead, at the moment it is routed to the bus."""

    payloads = (AnswerAccepted,)

    def __init__(self, state: BusState, period: float) -> None:
        self._state = state
        self._period = period

    def observe(self, envelope: Envelope, facts: Facts) -> Mapping[str, Any] | None:
        self._state.quiet_deadline = envelope.timestamp + self._period
        return {QUIET: False}


class InjectionBus(Actor):
    def __init__(
        self,
        context: ActorContext,
        *,
        visibility: Visibility,
        preview_chars: int,
        state: BusState,
        first_vote_wait: float | None = None,
    ) -> None:
        super().__init__(context)
        self._visibility = visibility
        self._preview = preview_chars
        self._state = state
        self._first_vote_wait = first_vote_wait
        self._timer_running = False

    async def started(self) -> None:
        state = self._state
        if state.quiet_deadline is not None:
            self._arm_quiet_timer()
        if state.first_vote_deadline is not None and not state.first_vote_wait_over:
            self.context.start_soon(self._end_first_vote_wait, state.first_vote_deadline)
        self._flush_when_idle()

    async def handle(self, envelope: Envelope) -> None:
        payload = envelope.payload
        if isinstance(payload, AnswerAccepted):
            state = self._state
            view = self._view(payload)
            for recipient in self._visibility.peers(payload.agent):
                state.pending.setdefault(recipient, []).append(view)
            if state.quiet_deadline is not None:
                self._arm_quiet_timer()
            wait = self._first_vote_wait
            if wait is not None and state.first_vote_deadline is None:
                state.first_vote_deadline = envelope.timestamp + wait
                self.context.start_soon(self._end_first_vote_wait, state.first_vote_deadline)
        self._flush_when_idle()

    async def _end_first_vote_wait(self, deadline: float) -> None:
        """Sleeps until the first-vote wait is over, then says so. Cancelled with the
        incarnation: the next one re-arms from the state."""
        await trio.sleep_until(deadline)
        self._state.first_vote_wait_over = True
        self.context.update_facts({FIRST_VOTE_WAIT_OVER: True})

    def _arm_quiet_timer(self) -> None:
        if not self._timer_running:
            self._timer_running = True
            self.context.start_soon(self._wait_for_quiet)

    async def _wait_for_quiet(self) -> None:
        """Sleeps until the deadline, which each accepted answer pushes back; then answers
        are quiet. Cancelled with the incarnation: the next one re-arms from the state."""
        state = self._state
        while True:
            deadline = state.quiet_deadline
            if deadline is None or trio.current_time() >= deadline:
                break
            await trio.sleep_until(deadline)
        state.quiet_deadline = None
        self._timer_running = False
        self.context.update_facts({QUIET: True})
        self._flush_when_idle()

    def _flush_when_idle(self) -> None:
        """Send the collected updates once no more accepted answers are queued and, with a
        quiet period, answers are quiet (sent sooner, the updates would only be held)."""
        state = self._state
        if not state.pending or state.quiet_deadline is not None:
            return
        if self.context.mailbox_statistics().queued:
            return
        pending, state.pending = state.pending, {}
        for recipient, answers in pending.items():
            self.context.tell_nowait(agent_address(recipient), AnswerUpdate(answers=tuple(answers)))

    def _view(self, accepted: AnswerAccepted) -> AnswerView:
        view = AnswerView(label=accepted.label, content=accepted.content, order=accepted.order)
        return view.cut(self._preview)
