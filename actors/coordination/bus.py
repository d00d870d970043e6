"""The InjectionBus: fans accepted answers out to the agents that can see them.

Bursts are coalesced here first: while more accepted answers are queued in the bus's own
mailbox, it only collects; when the mailbox runs dry it sends each recipient ONE update
holding every new answer for it. Agents coalesce again on their side (see AgentActor).

With a quiet period configured, the bus also keeps the ``answers_quiet`` fact that the
:class:`~actors.rules.HoldUntilQuiet` rule waits on.
"""

from __future__ import annotations

import trio

from actors.coordination.protocol import AnswerAccepted, AnswerUpdate, AnswerView
from actors.coordination.rules import QUIET
from actors.coordination.visibility import Visibility
from runtime import Actor, ActorContext, Address, Envelope

__all__ = ["InjectionBus", "agent_address"]


def agent_address(agent: str) -> Address:
    return Address("agent", agent)


class InjectionBus(Actor):
    def __init__(
        self,
        context: ActorContext,
        *,
        visibility: Visibility,
        preview_chars: int,
        quiet_period: float | None = None,
    ) -> None:
        super().__init__(context)
        self._visibility = visibility
        self._preview = preview_chars
        self._pending: dict[str, list[AnswerView]] = {}
        self._quiet_period = quiet_period
        self._quiet_timer: trio.CancelScope | None = None

    async def handle(self, envelope: Envelope) -> None:
        payload = envelope.payload
        if not isinstance(payload, AnswerAccepted):
            return
        if self._quiet_period is not None:
            self._answer_arrived(self._quiet_period)
        view = self._view(payload)
        for recipient in self._visibility.peers(payload.agent):
            self._pending.setdefault(recipient, []).append(view)
        if self.context.system.mailbox_statistics(self.context.address).queued == 0:
            self._flush()

    def _answer_arrived(self, period: float) -> None:
        """Answers are not quiet until ``period`` passes with no new one (fact ``QUIET``)."""
        deadline = trio.current_time() + period
        if self._quiet_timer is not None:
            self._quiet_timer.deadline = deadline
            return
        self.context.system.update_facts({QUIET: False})
        self._quiet_timer = trio.CancelScope(deadline=deadline)
        self.context.start_soon(self._wait_for_quiet, self._quiet_timer)

    async def _wait_for_quiet(self, timer: trio.CancelScope) -> None:
        """Sleeps until the timer's deadline, which each new answer pushes back."""
        with timer:
            await trio.sleep_forever()
        self._quiet_timer = None
        self.context.system.update_facts({QUIET: True})

    def _flush(self) -> None:
        pending, self._pending = self._pending, {}
        for recipient, answers in pending.items():
            self.context.tell_nowait(agent_address(recipient), AnswerUpdate(answers=tuple(answers)))

    def _view(self, accepted: AnswerAccepted) -> AnswerView:
        content = accepted.content
        if len(content) <= self._preview:
            return AnswerView(label=accepted.label, content=content)
        return AnswerView(
            label=accepted.label, content=content[: self._preview] + " …", truncated=True
        )
