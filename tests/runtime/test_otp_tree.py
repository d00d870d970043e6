"""The supervision tree as a whole: retiring a subtree frees its addresses, removing a rule
releases what it held, and restarts are counted wherever they happen."""

from __future__ import annotations

from trio.testing import wait_all_tasks_blocked

from conclave.runtime import (
    DELIVER,
    Envelope,
    Facts,
    Hold,
    MemoryTap,
    Released,
    SupervisorSpec,
    open_actor_system,
)
from conclave.runtime.routing import Decision
from tests.runtime.helpers import Crash, Journal, Note, addr, worker


def _never(facts: Facts) -> bool:
    return False


class HoldNotesForever:
    def decide(self, envelope: Envelope, facts: Facts) -> Decision:
        if isinstance(envelope.payload, Note):
            return Hold(_never, reason="until the rule goes", watch=frozenset({"never"}))
        return DELIVER


async def test_terminating_a_nested_supervisor_frees_its_actors_addresses(
    journal: Journal,
) -> None:
    async with open_actor_system() as system:
        team, team_child = system.supervisor_child("team", SupervisorSpec())
        system.root.start_child(team_child)
        system.spawn(addr("a"), worker(journal), supervisor=team)
        await wait_all_tasks_blocked()

        await system.root.terminate_child("team")

        assert not system.is_registered(addr("a"))
        system.spawn(addr("a"), worker(journal))
        await system.tell(addr("a"), Note(text="born again"))
        await wait_all_tasks_blocked()
        assert journal.handled("a") == [("born again", 1)]


async def test_terminating_a_nested_supervisor_frees_the_addresses_of_its_own_subtree(
    journal: Journal,
) -> None:
    async with open_actor_system() as system:
        team, team_child = system.supervisor_child("team", SupervisorSpec())
        system.root.start_child(team_child)
        squad, squad_child = system.supervisor_child("squad", SupervisorSpec())
        team.start_child(squad_child)
        system.spawn(addr("deep"), worker(journal), supervisor=squad)
        await wait_all_tasks_blocked()

        await system.root.terminate_child("team")

        assert not system.is_registered(addr("deep"))


async def test_retiring_a_supervisor_retires_children_still_waiting_to_start(
    journal: Journal,
) -> None:
    async with open_actor_system() as system:
        team, _ = system.supervisor_child("team", SupervisorSpec())
        system.spawn(addr("a"), worker(journal), supervisor=team)  # queued: team is not running

        team.retire_children()

        assert not system.is_registered(addr("a"))
        system.spawn(addr("a"), worker(journal))


async def test_removing_a_rule_releases_what_it_was_holding(
    tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), worker(journal))
        rule = HoldNotesForever()
        system.add_rule(rule)
        await system.tell(addr("a"), Note(text="held"))

        system.remove_rule(rule)
        await wait_all_tasks_blocked()

        assert system.held() == []
        assert [e.envelope.payload for e in tap.of_type(Released)] == [Note(text="held")]
        assert journal.handled("a") == [("held", 1)]


class HoldNotesWhileClosed:
    """Holds notes sent while the ``closed`` fact is set, until a fact nobody sets."""

    def decide(self, envelope: Envelope, facts: Facts) -> Decision:
        if isinstance(envelope.payload, Note) and facts.get("closed"):
            return Hold(_never, reason="sent while closed", watch=frozenset({"never"}))
        return DELIVER


async def test_removing_a_rule_leaves_what_other_rules_hold_held(journal: Journal) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        holder, unrelated = HoldNotesWhileClosed(), HoldNotesForever()
        system.add_rule(holder, at=addr("a"))
        system.update_facts({"closed": True})
        await system.tell(addr("a"), Note(text="held by the other rule"))
        system.update_facts({"closed": False})
        system.add_rule(unrelated, at=addr("b"))

        system.remove_rule(unrelated)
        await wait_all_tasks_blocked()

        assert [e.payload for e in system.held()] == [Note(text="held by the other rule")]
        assert journal.handled("a") == []


async def test_statistics_count_restarts_in_nested_supervisors(journal: Journal) -> None:
    async with open_actor_system() as system:
        team, team_child = system.supervisor_child("team", SupervisorSpec(intensity=5))
        system.root.start_child(team_child)
        system.spawn(addr("a"), worker(journal), supervisor=team)
        system.spawn(addr("b"), worker(journal))
        for key in ("a", "a", "b"):
            await system.tell(addr(key), Crash())
            await wait_all_tasks_blocked()

        assert system.statistics().restarts == 3


async def test_statistics_keep_counting_restarts_of_a_terminated_subtree(
    journal: Journal,
) -> None:
    async with open_actor_system() as system:
        team, team_child = system.supervisor_child("team", SupervisorSpec(intensity=5))
        system.root.start_child(team_child)
        system.spawn(addr("a"), worker(journal), supervisor=team)
        await system.tell(addr("a"), Crash())
        await wait_all_tasks_blocked()

        await system.root.terminate_child("team")

        assert system.statistics().restarts == 1
