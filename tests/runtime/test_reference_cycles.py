"""A closed actor system leaves nothing to the cycle collector: its supervisors forget their
children and stop recording, and its router drops its callbacks into it, so the system, its
actors and their state are freed by reference counting once nothing else holds them."""

from __future__ import annotations

import trio

from conclave.runtime import MailboxSpec, SupervisorSpec, open_actor_system
from tests.cyclic_garbage import collector_paused, cyclic_garbage
from tests.runtime.helpers import Crash, Journal, Note, addr, worker

RUNTIME_CLASSES = {
    "conclave.runtime.system.ActorSystem",
    "conclave.runtime.router.Router",
    "conclave.runtime.supervision.Supervisor",
    "conclave.runtime.supervision._Child",
    "conclave.runtime.supervision.ChildSpec",
    "conclave.runtime.mailbox.Mailbox",
    "tests.runtime.helpers.Worker",
}


async def _system_with_nested_actors_and_queued_mail() -> None:
    journal = Journal()
    async with open_actor_system() as system:
        nested, child = system.supervisor_child("nested", SupervisorSpec())
        system.root.start_child(child)
        for key in ("a", "b"):
            system.spawn(addr(key), worker(journal))
        system.spawn(addr("c"), worker(journal), supervisor=nested)
        await system.tell(addr("a"), Note(text="handled"))
        system.spawn(addr("slow"), worker(journal), mailbox=MailboxSpec(capacity=8))
        await trio.sleep(0.1)
        system.tell_nowait(addr("slow"), Note(text="left queued at shutdown"))


async def test_a_closed_system_leaves_no_runtime_object_in_a_reference_cycle(
    autojump_clock: object,
) -> None:
    with collector_paused():
        await _system_with_nested_actors_and_queued_mail()
        garbage = cyclic_garbage()

    assert not RUNTIME_CLASSES & garbage.keys(), garbage.most_common(20)


async def _system_whose_actor_crashed_and_restarted() -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(Journal()))
        await system.tell(addr("a"), Crash())
        await trio.sleep(0.1)


async def test_a_crash_leaves_no_runtime_object_in_a_reference_cycle_with_its_traceback(
    autojump_clock: object,
) -> None:
    with collector_paused():
        await _system_whose_actor_crashed_and_restarted()
        garbage = cyclic_garbage()

    assert not RUNTIME_CLASSES & garbage.keys(), garbage.most_common(20)
    assert garbage["builtins.RuntimeError"] == 0
