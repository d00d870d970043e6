"""An actor's own supervisor (``context.children()``): linked to the incarnation that opened
it, so a parent's stop, crash or restart stops its children, and a crashed child is
restarted or reported by its restart type, never lost silently."""

from __future__ import annotations

import trio
from trio.testing import wait_all_tasks_blocked

from conclave.runtime import (
    Actor,
    ActorContext,
    ActorFactory,
    ChildExited,
    ChildStopped,
    Envelope,
    HowStopped,
    MemoryTap,
    Message,
    Restart,
    SupervisorAction,
    SupervisorSpec,
    message,
    open_actor_system,
)
from tests.runtime.helpers import Crash, Finish, Journal, Note, addr, events, worker


@message(kind="rt_test.open_child")
class OpenChild(Message):
    key: str
    restart: Restart = Restart.TRANSIENT


class Parent(Actor):
    """Opens a child worker per :class:`OpenChild`; crashes on :class:`Crash`; stops on
    :class:`Finish`. Journals the exits its children report."""

    def __init__(self, context: ActorContext, journal: Journal, spec: SupervisorSpec) -> None:
        super().__init__(context)
        self.journal = journal
        self.spec = spec

    async def started(self) -> None:
        self.journal.add("started", "parent", self.context.incarnation)

    async def handle(self, envelope: Envelope) -> None:
        payload = envelope.payload
        if isinstance(payload, OpenChild):
            children = self.context.children(self.spec, on_exit=self._exited)
            children.spawn(addr(payload.key), worker(self.journal), restart=payload.restart)
        elif isinstance(payload, Crash):
            raise RuntimeError(payload.reason)
        elif isinstance(payload, Finish):
            self.context.stop()

    async def stopping(self) -> None:
        self.journal.add("stopping", "parent", self.context.incarnation)

    def _exited(self, event: ChildExited) -> None:
        self.journal.add("child exited", event.child, event.error, event.action)


def parent(journal: Journal, spec: SupervisorSpec | None = None) -> ActorFactory:
    return lambda context: Parent(context, journal, spec or SupervisorSpec())


PARENT = addr("parent")


async def test_a_child_opened_by_an_actor_runs_and_handles_its_mail(journal: Journal) -> None:
    async with open_actor_system() as system:
        system.spawn(PARENT, parent(journal))
        await system.tell(PARENT, OpenChild(key="kid"))
        await wait_all_tasks_blocked()
        await system.tell(addr("kid"), Note(text="hello"))
        await wait_all_tasks_blocked()

        assert journal.handled("kid") == [("hello", 1)]


async def test_a_parent_that_stops_stops_its_children_gracefully_and_frees_them(
    journal: Journal, tap: MemoryTap
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(PARENT, parent(journal), restart=Restart.TRANSIENT)
        await system.tell(PARENT, OpenChild(key="a"))
        await system.tell(PARENT, OpenChild(key="b"))
        await wait_all_tasks_blocked()

        await system.tell(PARENT, Finish())
        await wait_all_tasks_blocked()

        assert not system.is_registered(addr("a")) and not system.is_registered(addr("b"))
        stopped = events(tap, ChildStopped, supervisor="worker:parent#1/children")
        assert [(e.child, e.how) for e in stopped] == [
            ("worker:b", HowStopped.GRACEFUL),
            ("worker:a", HowStopped.GRACEFUL),
        ]
        # The parent's stopping() runs first: it may still talk to its children.
        assert journal.of("stopping") == ["parent", "b", "a"]


async def test_a_parent_that_crashes_and_restarts_has_its_children_stopped(
    journal: Journal, tap: MemoryTap
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(PARENT, parent(journal))
        await system.tell(PARENT, OpenChild(key="kid"))
        await wait_all_tasks_blocked()

        await system.tell(PARENT, Crash())
        await wait_all_tasks_blocked()

        assert journal.starts("parent") == [1, 2]
        assert "kid" in journal.of("stopping")
        assert not system.is_registered(addr("kid"))
        assert events(tap, ChildStopped, supervisor="worker:parent#1/children", child="worker:kid")
        # The new incarnation starts afresh: the child's address can be opened again.
        await system.tell(PARENT, OpenChild(key="kid"))
        await wait_all_tasks_blocked()
        await system.tell(addr("kid"), Note(text="again"))
        await wait_all_tasks_blocked()
        assert journal.handled("kid") == [("again", 1)]


async def test_a_parent_cancelled_by_its_supervisor_still_stops_its_children(
    journal: Journal, tap: MemoryTap
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(PARENT, parent(journal), shutdown=0.0)
        await system.tell(PARENT, OpenChild(key="kid"))
        await wait_all_tasks_blocked()

        await system.root.terminate_child(str(PARENT))

        assert not system.is_registered(addr("kid"))
        assert events(tap, ChildStopped, supervisor="worker:parent#1/children", child="worker:kid")


async def test_a_crashed_transient_child_is_restarted_and_reported(journal: Journal) -> None:
    async with open_actor_system() as system:
        system.spawn(PARENT, parent(journal))
        await system.tell(PARENT, OpenChild(key="kid"))
        await wait_all_tasks_blocked()

        await system.tell(addr("kid"), Crash(reason="on purpose"))
        await wait_all_tasks_blocked()

        assert journal.starts("kid") == [1, 2]
        assert (
            "child exited",
            "worker:kid",
            "RuntimeError: on purpose",
            SupervisorAction.RESTART,
        ) in (journal.entries)


async def test_a_crashed_temporary_child_is_reported_to_its_parent_not_lost(
    journal: Journal,
) -> None:
    async with open_actor_system() as system:
        system.spawn(PARENT, parent(journal))
        await system.tell(PARENT, OpenChild(key="kid", restart=Restart.TEMPORARY))
        await wait_all_tasks_blocked()

        await system.tell(addr("kid"), Crash(reason="on purpose"))
        await wait_all_tasks_blocked()

        assert journal.starts("kid") == [1]
        assert not system.is_registered(addr("kid"))
        assert (
            "child exited",
            "worker:kid",
            "RuntimeError: on purpose",
            SupervisorAction.RETIRE,
        ) in (journal.entries)


async def test_a_child_that_keeps_crashing_crashes_its_parent(journal: Journal) -> None:
    async with open_actor_system() as system:
        system.spawn(PARENT, parent(journal, SupervisorSpec(intensity=1, period=60)))
        await system.tell(PARENT, OpenChild(key="kid"))
        await wait_all_tasks_blocked()

        for _ in range(2):
            await system.tell(addr("kid"), Crash())
            await wait_all_tasks_blocked()

        assert journal.starts("parent") == [1, 2]
        assert not system.is_registered(addr("kid"))


async def test_children_cannot_be_opened_after_their_incarnation_ended(journal: Journal) -> None:
    kept: list[ActorContext] = []

    class Keeper(Actor):
        async def started(self) -> None:
            kept.append(self.context)
            self.context.children()

    async with open_actor_system() as system:
        system.spawn(PARENT, Keeper, restart=Restart.TEMPORARY)
        await wait_all_tasks_blocked()
        await system.root.terminate_child(str(PARENT))
        await trio.lowlevel.checkpoint()

        try:
            kept[0].children().spawn(addr("late"), worker(journal))
        except RuntimeError as exc:
            assert "closed" in str(exc)
        else:
            raise AssertionError("a closed incarnation opened a child")
        assert not system.is_registered(addr("late"))


async def test_children_first_opened_while_the_incarnation_ends_are_closed_at_once(
    journal: Journal,
) -> None:
    refused: list[str] = []

    class LateOpener(Actor):
        async def started(self) -> None:
            self.context.start_soon(self._work)

        async def _work(self) -> None:
            try:
                await trio.sleep_forever()
            finally:  # cancelled as the incarnation ends: its children are being closed
                children = self.context.children()
                try:
                    children.spawn(addr("late"), worker(journal))
                except RuntimeError as exc:
                    refused.append(str(exc))
                else:
                    children.close()  # else nothing would, and the incarnation would never end

    async with open_actor_system() as system:
        system.spawn(PARENT, LateOpener, restart=Restart.TEMPORARY)
        await wait_all_tasks_blocked()
        await system.root.terminate_child(str(PARENT))

        assert not system.is_registered(PARENT) and not system.is_registered(addr("late"))
        assert len(refused) == 1 and "closed" in refused[0]
