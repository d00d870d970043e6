"""Shared vocabulary for the kernel tests: test messages, a journaling actor, event helpers."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import trio

from conclave.runtime import Actor, ActorContext, Address, Envelope, Message, message
from conclave.runtime.eventlog import MemoryTap
from conclave.runtime.events import Event


@message(kind="rt_test.note")
class Note(Message):
    text: str


@message(kind="rt_test.crash")
class Crash(Message):
    reason: str = "boom"


@message(kind="rt_test.finish")
class Finish(Message):
    """Ask the actor to stop after this message (a normal exit)."""


@message(kind="rt_test.hang")
class Hang(Message):
    """The handler never returns unless cancelled."""


@message(kind="rt_test.nap")
class Nap(Message):
    seconds: float


@message(kind="rt_test.echo")
class Echo(Message):
    text: str


@message(kind="rt_test.late_echo")
class LateEcho(Message):
    text: str
    delay: float


@message(kind="rt_test.crash_in_background")
class CrashInBackground(Message):
    """The handler starts background work that raises a moment later."""


@message(kind="rt_test.work_in_background")
class WorkInBackground(Message):
    """The handler starts background work that runs until cancelled, journaling its end."""


@message(kind="rt_test.silence")
class Silence(Message):
    """The handler returns without replying."""


@message(kind="rt_test.stash")
class Stash(Message):
    """The handler keeps the request to answer later (see :class:`AnswerStashed`)."""


@message(kind="rt_test.answer_stashed")
class AnswerStashed(Message):
    """The handler answers every stashed request with ``Echo(text="later")``."""


@message(kind="rt_test.reply_twice")
class ReplyTwice(Message):
    """The handler replies ``Echo(text="first")``, then ``Echo(text="second")``."""


class Journal:
    """What actors did, in order, as tuples: ("started" | "handled" | "stopping", ...)."""

    def __init__(self) -> None:
        self.entries: list[tuple[object, ...]] = []

    def add(self, *entry: object) -> None:
        self.entries.append(entry)

    def starts(self, who: str) -> list[int]:
        """Incarnation numbers of ``who`` in the order they started."""
        return [e[2] for e in self.entries if e[0] == "started" and e[1] == who]  # type: ignore[misc]

    def handled(self, who: str) -> list[tuple[str, int]]:
        """(text, incarnation) of each Note ``who`` handled."""
        return [(e[2], e[3]) for e in self.entries if e[0] == "handled" and e[1] == who]  # type: ignore[misc]

    def of(self, kind: str) -> list[str]:
        return [str(e[1]) for e in self.entries if e[0] == kind]


class Worker(Actor):
    """Journals its lifecycle and obeys the test messages above."""

    def __init__(self, context: ActorContext, journal: Journal) -> None:
        super().__init__(context)
        self.journal = journal
        self.name = context.address.key
        self.stashed: list[Envelope] = []

    async def started(self) -> None:
        self.journal.add("started", self.name, self.context.incarnation)

    async def handle(self, envelope: Envelope) -> None:
        payload = envelope.payload
        if envelope.is_reply:
            self.journal.add("reply", self.name, payload, envelope.correlation_id)
        elif isinstance(payload, Note):
            self.journal.add("handled", self.name, payload.text, self.context.incarnation)
        elif isinstance(payload, Crash):
            raise RuntimeError(payload.reason)
        elif isinstance(payload, Finish):
            self.context.stop()
        elif isinstance(payload, Hang):
            await trio.sleep_forever()
        elif isinstance(payload, Nap):
            await trio.sleep(payload.seconds)
            self.journal.add("napped", self.name, payload.seconds)
        elif isinstance(payload, Echo):
            self.context.reply(envelope, Echo(text=payload.text))
        elif isinstance(payload, LateEcho):
            await trio.sleep(payload.delay)
            self.context.reply(envelope, Echo(text=payload.text))
        elif isinstance(payload, CrashInBackground):
            self.context.start_soon(self._crash_soon)
        elif isinstance(payload, WorkInBackground):
            self.context.start_soon(self._work_forever)
        elif isinstance(payload, Stash):
            self.stashed.append(envelope)
        elif isinstance(payload, AnswerStashed):
            for request in self.stashed:
                self.context.reply(request, Echo(text="later"))
            self.stashed.clear()
        elif isinstance(payload, ReplyTwice):
            self.context.reply(envelope, Echo(text="first"))
            self.context.reply(envelope, Echo(text="second"))

    async def _crash_soon(self) -> None:
        await trio.lowlevel.checkpoint()
        raise RuntimeError("background work failed")

    async def _work_forever(self) -> None:
        try:
            await trio.sleep_forever()
        finally:
            self.journal.add("background ended", self.name, self.context.incarnation)

    async def stopping(self) -> None:
        self.journal.add("stopping", self.name, self.context.incarnation)


def envelope(text: str) -> Envelope:
    """A note for a bare mailbox's specs, from nobody to ``box``."""
    return Envelope(sender=None, recipient=Address("box"), payload=Note(text=text))


def worker(journal: Journal) -> Callable[[ActorContext], Actor]:
    return lambda context: Worker(context, journal)


def addr(key: str) -> Address:
    return Address("worker", key)


E = TypeVar("E", bound=Event)


def events(tap: MemoryTap, cls: type[E], **match: object) -> list[E]:
    """Events of type ``cls`` whose attributes equal ``match``."""
    return [e for e in tap.of_type(cls) if all(getattr(e, k) == v for k, v in match.items())]
