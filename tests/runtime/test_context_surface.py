"""What an actor sees of the kernel is its :class:`ActorContext`: deliberate operations
(send, ask, reply, record, update the routing facts, its own mailbox's statistics), never
the actor system itself, which could spawn, re-route or read any other actor's mailbox."""

from __future__ import annotations

import ast
from pathlib import Path

import trio
from trio.testing import wait_all_tasks_blocked

from conclave.runtime import (
    Actor,
    ActorContext,
    Envelope,
    Event,
    MemoryTap,
    Restart,
    message,
    open_actor_system,
)
from tests.runtime.helpers import Journal, Note, addr, worker
from tests.runtime.test_routing import HoldUntilGateOpens

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE_THE_KERNEL = ("actors", "ui", "config", "benchmarks", "tests")


class Reporter(Actor):
    """Handles a Note by doing what its text says, through its context only."""

    def __init__(self, context: ActorContext, seen: list[object]) -> None:
        super().__init__(context)
        self.seen = seen

    async def started(self) -> None:
        self.seen.append(hasattr(self.context, "system"))

    async def handle(self, envelope: Envelope) -> None:
        payload = envelope.payload
        assert isinstance(payload, Note)
        if payload.text == "open the gate":
            self.context.update_facts({"gate": "open"})
        elif payload.text == "how much is queued?":
            await trio.sleep(1.0)  # long enough for the rest of the burst to queue up
            self.seen.append(self.context.mailbox_statistics().queued)


async def test_an_actor_context_hands_out_no_actor_system() -> None:
    seen: list[object] = []
    async with open_actor_system() as system:
        system.spawn(addr("a"), lambda context: Reporter(context, seen))
        await wait_all_tasks_blocked()

    assert seen == [False]


async def test_an_actor_updates_routing_facts_through_its_context(journal: Journal) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("held"), worker(journal))
        system.spawn(addr("opener"), lambda context: Reporter(context, []))
        system.add_rule(HoldUntilGateOpens(), at=addr("held"))
        await system.tell(addr("held"), Note(text="wait for the gate"))
        await wait_all_tasks_blocked()
        assert journal.handled("held") == []

        await system.tell(addr("opener"), Note(text="open the gate"))
        await wait_all_tasks_blocked()

        assert journal.handled("held") == [("wait for the gate", 1)]


async def test_an_actor_sees_how_much_mail_is_queued_in_its_own_mailbox(
    autojump_clock: object,
) -> None:
    seen: list[object] = []
    async with open_actor_system() as system:
        system.spawn(addr("a"), lambda context: Reporter(context, seen))
        await system.tell(addr("a"), Note(text="how much is queued?"))
        for i in range(3):
            await system.tell(addr("a"), Note(text=f"queued {i}"))
        await trio.sleep(2.0)

    assert seen == [False, 3]


@message(kind="rt_test.late_news")
class LateNews(Event):
    """Recorded by a resource that outlived the incarnation that opened it."""


class StopsAtOnce(Actor):
    """Keeps its context where the test can use it, and stops."""

    def __init__(self, context: ActorContext, contexts: list[ActorContext]) -> None:
        super().__init__(context)
        contexts.append(context)

    async def started(self) -> None:
        self.context.stop()


async def test_an_event_recorded_through_a_context_reaches_the_taps_after_its_incarnation(
    tap: MemoryTap,
) -> None:
    contexts: list[ActorContext] = []
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(
            addr("a"), lambda context: StopsAtOnce(context, contexts), restart=Restart.TRANSIENT
        )
        await wait_all_tasks_blocked()
        assert not system.is_registered(addr("a"))

        contexts[0].record(LateNews(at=trio.current_time()))

        assert tap.of_type(LateNews)


def _reads_the_system(node: ast.AST) -> bool:
    """``<context>.system`` (a context named ``context``/``ctx``, or ``<x>.context``), or
    anything's ``_system``."""
    if not isinstance(node, ast.Attribute):
        return False
    if node.attr == "_system":
        return True
    value = node.value
    is_context = (isinstance(value, ast.Name) and value.id in ("context", "ctx")) or (
        isinstance(value, ast.Attribute) and value.attr == "context"
    )
    return node.attr == "system" and is_context


def _reaches(path: Path) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute) and _reads_the_system(node)
    ]


def test_no_code_outside_the_kernel_reaches_the_actor_system_through_a_context() -> None:
    found = [
        where
        for folder in OUTSIDE_THE_KERNEL
        for path in sorted((ROOT / folder).rglob("*.py"))
        for where in _reaches(path)
    ]

    assert found == []
