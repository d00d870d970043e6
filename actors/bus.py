"""The InjectionBus: fans accepted answers out to the agents that can see them.

Bursts are coalesced here first: while more accepted answers are queued in the bus's own
mailbox, it only collects; when the mailbox runs dry it sends each recipient ONE update
holding every new answer for it. Agents coalesce again on their side (see AgentActor).
"""

from __future__ import annotations

from actors.messages import AnswerAccepted, AnswerUpdate, AnswerView
from actors.visibility import Visibility
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
        anonymous: dict[str, str],
        preview_chars: int,
    ) -> None:
        super().__init__(context)
        self._visibility = visibility
        self._anonymous = anonymous
        self._preview = preview_chars
        self._pending: dict[str, list[AnswerView]] = {}

    async def handle(self, envelope: Envelope) -> None:
        payload = envelope.payload
        if not isinstance(payload, AnswerAccepted):
            return
        view = self._view(payload)
        for recipient in self._visibility.peers(payload.agent):
            self._pending.setdefault(recipient, []).append(view)
        if self.context.system.mailbox_statistics(self.context.address).queued == 0:
            self._flush()

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
