"""Agents' questions in the REPL: each opens the question card (:mod:`ui.repl.question_card`)
in the input's place, and the person's answer goes back to the agent, which continues.

:class:`ReplQuestions` is the :class:`~actors.human.questions.QuestionGate` of every run the
REPL drives. The run's question desk shows it one question at a time, with the run's timer
paused, so a card never waits behind another. Esc on the card takes the question's default;
Ctrl+C ends the run as ever (the question is abandoned with it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from conclave.actors.human.questions import PendingQuestion, Reply
from conclave.ui.repl.question_card import QuestionCard
from conclave.ui.repl.state import Dialog

if TYPE_CHECKING:
    from conclave.ui.repl.app import Repl
    from conclave.ui.repl.service import ReplService

__all__ = ["ReplQuestions", "attach_questions"]


def attach_questions(repl: Repl, service: ReplService) -> None:
    """Every run the REPL drives takes questions, answered on the card."""
    repl.questions = service.questions = ReplQuestions(repl, service)


class ReplQuestions:
    """:meth:`ask` runs on the runtime's thread; the card lives on the UI's, so it is opened
    and closed there (through the service) and the answer comes back through the trio
    token."""

    def __init__(self, repl: Repl, service: ReplService) -> None:
        self.repl = repl
        self.service = service
        self.card: QuestionCard | None = None
        """The open card: read and written on the UI's thread only."""

    async def ask(self, asked: PendingQuestion) -> Reply:
        """Show the card and wait for the answer. Cancelled (the run ended), the card
        closes unanswered."""
        token = trio.lowlevel.current_trio_token()
        send, receive = trio.open_memory_channel[Reply](1)
        agent = asked.agent
        card = QuestionCard(agent, asked.question)
        card.on_answered.append(lambda reply: token.run_sync_soon(_deliver, send, reply))
        self.service.post(lambda: self._open(card))
        try:
            reply = await receive.receive()
        finally:
            self.service.post(lambda: self._close(card))
        self.service.post(lambda: self.repl.say(f"you answered {agent}: {reply.value}"))
        return reply

    def take_default(self) -> None:
        """Esc (or the REPL's close key) on the card: its default."""
        if self.card is not None:
            self.card.take_default()

    def _open(self, card: QuestionCard) -> None:
        repl, state = self.repl, self.repl.state
        self.card = card
        repl.plan_container = card.container
        state.dialog = Dialog.QUESTION
        # As the plan dialog does: learn the parents now, so the first key finds the card's.
        repl.app.layout.update_parents_relations()
        repl.app.layout.focus(card.focus)
        state.on_change()

    def _close(self, card: QuestionCard) -> None:
        repl, state = self.repl, self.repl.state
        if self.card is not card:
            return
        self.card = None
        if state.dialog is Dialog.QUESTION:
            repl.plan_container = None
            state.dialog = Dialog.NONE
            repl.app.layout.focus(repl.buffer)
        state.on_change()


def _deliver(send: trio.MemorySendChannel[Reply], reply: Reply) -> None:
    try:
        send.send_nowait(reply)
    except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
        return  # answered already, or nobody waits any more
