"""Routing rules: Drop, Hold/release, Redirect, failing rules, system-wide vs per-mailbox."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from conclave.runtime import (
    DELIVER,
    Address,
    DeadLetter,
    DeadLetterCause,
    Delivered,
    Envelope,
    Facts,
    Held,
    Hold,
    MailboxSpec,
    MemoryTap,
    Redirect,
    Redirected,
    RedirectLoop,
    Released,
    RoutingRuleError,
    Undeliverable,
    open_actor_system,
)
from conclave.runtime.routing import Decision, Drop
from tests.runtime.helpers import Echo, Hang, Journal, Nap, Note, addr, worker


@attrs.frozen
class DropNotes:
    reason: str = "notes are muted"

    def decide(self, envelope: Envelope, facts: Facts) -> Decision:
        return Drop(self.reason) if isinstance(envelope.payload, Note | Echo) else DELIVER


def _gate_open(facts: Facts) -> bool:
    return facts.get("gate") == "open"


@attrs.frozen
class HoldUntilGateOpens:
    """Holds every Note until the ``gate`` fact is ``"open"``."""

    def decide(self, envelope: Envelope, facts: Facts) -> Decision:
        if not isinstance(envelope.payload, Note) or _gate_open(facts):
            return DELIVER
        return Hold(_gate_open, reason="gate is closed")


@attrs.frozen
class RedirectTo:
    to: Address

    def decide(self, envelope: Envelope, facts: Facts) -> Decision:
        return Redirect(self.to)


@attrs.frozen
class ExplodesOn:
    """Raises for a Note with this text; delivers everything else."""

    text: str
    name: str = "explodes-on"

    def decide(self, envelope: Envelope, facts: Facts) -> Decision:
        if envelope.payload == Note(text=self.text):
            raise KeyError(self.text)
        return DELIVER


@attrs.frozen
class ExplodesOnceGateOpens:
    name: str = "fragile"

    def decide(self, envelope: Envelope, facts: Facts) -> Decision:
        if _gate_open(facts):
            raise ValueError("cannot route with the gate open")
        return DELIVER


@attrs.frozen
class GateObserver:
    """Opens the gate when a Note "open the gate" is delivered."""

    def observe(self, envelope: Envelope, facts: Facts) -> Mapping[str, Any] | None:
        if envelope.payload == Note(text="open the gate"):
            return {"gate": "open"}
        return None


# ---------------------------------------------------------------- Drop


async def test_a_dropped_message_becomes_a_dead_letter_with_the_rules_reason(
    tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), worker(journal))
        system.add_rule(DropNotes(reason="muted by test"))
        await system.tell(addr("a"), Note(text="hello"))

        [dead] = tap.of_type(DeadLetter)
        assert dead.cause is DeadLetterCause.DROPPED
        assert dead.reason == "muted by test"
        assert dead.envelope.payload == Note(text="hello")
        assert dead.envelope.recipient == addr("a")


async def test_a_dropped_message_never_reaches_the_actor(journal: Journal) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        system.add_rule(DropNotes())
        await system.tell(addr("a"), Note(text="hello"))
        await wait_all_tasks_blocked()

        assert journal.handled("a") == []


async def test_an_ask_whose_request_is_dropped_raises_undeliverable(journal: Journal) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        system.add_rule(DropNotes(reason="muted"))
        with pytest.raises(Undeliverable, match="dropped: muted"):
            await system.ask(addr("a"), Echo(text="anyone?"))


# ---------------------------------------------------------------- Hold and release


async def test_a_held_message_is_not_delivered_while_its_condition_is_false(
    tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), worker(journal))
        system.add_rule(HoldUntilGateOpens())
        await system.tell(addr("a"), Note(text="wait for it"))
        await wait_all_tasks_blocked()

        assert journal.handled("a") == []
        assert [e.reason for e in tap.of_type(Held)] == ["gate is closed"]
        assert system.statistics().held_now == 1


async def test_update_facts_releases_held_mail_once_its_condition_holds(
    tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), worker(journal))
        system.add_rule(HoldUntilGateOpens())
        await system.tell(addr("a"), Note(text="wait for it"))
        system.update_facts({"gate": "ajar"})
        await wait_all_tasks_blocked()
        assert journal.handled("a") == []

        system.update_facts({"gate": "open"})
        await wait_all_tasks_blocked()

        assert journal.handled("a") == [("wait for it", 1)]
        assert [e.envelope.payload for e in tap.of_type(Released)] == [Note(text="wait for it")]
        assert system.held() == []


@attrs.define
class CountingGate:
    """HoldUntilGateOpens, counting the envelopes it is asked about."""

    asked: int = 0

    def decide(self, envelope: Envelope, facts: Facts) -> Decision:
        self.asked += 1
        return HoldUntilGateOpens().decide(envelope, facts)


async def test_a_released_envelope_is_decided_on_once(journal: Journal) -> None:
    gate = CountingGate()
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        system.add_rule(gate)
        await system.tell(addr("a"), Note(text="wait for it"))
        assert gate.asked == 1

        system.update_facts({"gate": "open"})
        await wait_all_tasks_blocked()

        assert journal.handled("a") == [("wait for it", 1)]
        assert gate.asked == 2  # held, then released: the release is not decided again


async def test_held_messages_are_released_in_the_order_they_were_held(journal: Journal) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        system.add_rule(HoldUntilGateOpens())
        for text in ["one", "two", "three"]:
            await system.tell(addr("a"), Note(text=text))
        system.update_facts({"gate": "open"})
        await wait_all_tasks_blocked()

        assert [text for text, _ in journal.handled("a")] == ["one", "two", "three"]


async def test_a_fact_observer_releases_held_mail_when_the_message_it_watches_is_delivered(
    journal: Journal,
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        system.spawn(addr("b"), worker(journal))
        system.add_rule(HoldUntilGateOpens(), at=addr("a"))
        system.add_observer(GateObserver())
        await system.tell(addr("a"), Note(text="held"))
        await system.tell(addr("b"), Note(text="open the gate"))
        await wait_all_tasks_blocked()

        assert system.facts["gate"] == "open"
        assert journal.handled("a") == [("held", 1)]


async def test_a_released_message_waits_for_room_in_a_full_mailbox(
    autojump_clock: trio.testing.MockClock, journal: Journal
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal), mailbox=MailboxSpec(capacity=1))
        system.add_rule(HoldUntilGateOpens())
        await system.tell(addr("a"), Nap(seconds=10))
        await wait_all_tasks_blocked()
        await system.tell(addr("a"), Nap(seconds=0))
        await system.tell(addr("a"), Note(text="held"))
        system.update_facts({"gate": "open"})
        await trio.sleep(11)

        assert journal.entries[1:] == [
            ("napped", "a", 10),
            ("napped", "a", 0),
            ("handled", "a", "held", 1),
        ]


async def test_mail_still_held_at_shutdown_is_dead_lettered(
    tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), worker(journal))
        system.add_rule(HoldUntilGateOpens())
        await system.tell(addr("a"), Note(text="never released"))

    [dead] = tap.of_type(DeadLetter)
    assert dead.envelope.payload == Note(text="never released")
    assert dead.cause is DeadLetterCause.UNDELIVERABLE


async def test_a_released_message_still_waiting_for_mailbox_room_at_shutdown_is_dead_lettered(
    tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), worker(journal), mailbox=MailboxSpec(capacity=1), shutdown=0)
        await system.tell(addr("a"), Hang())
        await wait_all_tasks_blocked()
        await system.tell(addr("a"), Note(text="queued"))
        system.add_rule(HoldUntilGateOpens())
        await system.tell(addr("a"), Note(text="held"))
        system.update_facts({"gate": "open"})
        await wait_all_tasks_blocked()

    dead_notes = {
        e.envelope.payload.text
        for e in tap.of_type(DeadLetter)
        if isinstance(e.envelope.payload, Note)
    }
    assert dead_notes == {"queued", "held"}


async def test_a_held_message_whose_release_fails_is_dead_lettered(
    tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), worker(journal))
        system.add_rule(HoldUntilGateOpens())
        system.add_rule(ExplodesOnceGateOpens())
        await system.tell(addr("a"), Note(text="fragile"))
        system.update_facts({"gate": "open"})

        [dead] = tap.of_type(DeadLetter)
        assert dead.envelope.payload == Note(text="fragile")
        assert "routing rule fragile failed" in dead.reason


async def test_an_ask_held_and_then_failing_its_release_raises_the_rule_error(
    journal: Journal,
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        system.add_rule(HoldUntilGateOpens())
        system.add_rule(ExplodesOnceGateOpens())

        async def open_gate_later() -> None:
            await wait_all_tasks_blocked()
            system.update_facts({"gate": "open"})

        async with trio.open_nursery() as nursery:
            nursery.start_soon(open_gate_later)
            with pytest.raises(RoutingRuleError, match="fragile"):
                await system.ask(addr("a"), Note(text="question"))


# ---------------------------------------------------------------- Redirect


async def test_redirect_delivers_to_the_new_address(journal: Journal) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        system.spawn(addr("b"), worker(journal))
        system.add_rule(RedirectTo(addr("b")), at=addr("a"))
        await system.tell(addr("a"), Note(text="for a"))
        await wait_all_tasks_blocked()

        assert journal.handled("a") == []
        assert journal.handled("b") == [("for a", 1)]


async def test_redirect_is_recorded_with_the_original_envelope_and_target(
    tap: MemoryTap, journal: Journal
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.spawn(addr("a"), worker(journal))
        system.spawn(addr("b"), worker(journal))
        system.add_rule(RedirectTo(addr("b")), at=addr("a"))
        await system.tell(addr("a"), Note(text="for a"))

        [redirected] = tap.of_type(Redirected)
        assert (redirected.envelope.recipient, redirected.to) == (addr("a"), addr("b"))
        [delivered] = tap.of_type(Delivered)
        assert delivered.envelope.recipient == addr("b")


async def test_an_ask_redirected_elsewhere_gets_the_reply_of_the_new_recipient(
    journal: Journal,
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("b"), worker(journal))
        system.add_rule(RedirectTo(addr("b")), at=addr("nobody"))

        assert await system.ask(addr("nobody"), Echo(text="hi")) == Echo(text="hi")


async def test_a_redirect_cycle_raises_redirect_loop_to_the_sender(journal: Journal) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        system.spawn(addr("b"), worker(journal))
        system.add_rule(RedirectTo(addr("b")), at=addr("a"))
        system.add_rule(RedirectTo(addr("a")), at=addr("b"))

        with pytest.raises(RedirectLoop):
            await system.tell(addr("a"), Note(text="round and round"))


# ---------------------------------------------------------------- failing rules


async def test_a_rule_that_raises_surfaces_to_the_sender_as_routing_rule_error(
    journal: Journal,
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        system.add_rule(ExplodesOn(text="bad"))

        with pytest.raises(RoutingRuleError, match="routing rule explodes-on failed: KeyError"):
            await system.tell(addr("a"), Note(text="bad"))


async def test_routing_rule_error_keeps_the_rules_exception_as_its_cause(journal: Journal) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        system.add_rule(ExplodesOn(text="bad"))

        with pytest.raises(RoutingRuleError) as caught:
            system.tell_nowait(addr("a"), Note(text="bad"))
        assert isinstance(caught.value.__cause__, KeyError)
        assert caught.value.rule == "explodes-on"


async def test_the_system_keeps_routing_after_a_rule_raised(journal: Journal) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        system.add_rule(ExplodesOn(text="bad"))
        with pytest.raises(RoutingRuleError):
            await system.tell(addr("a"), Note(text="bad"))

        await system.tell(addr("a"), Note(text="good"))
        await wait_all_tasks_blocked()

        assert journal.handled("a") == [("good", 1)]


# ---------------------------------------------------------------- where rules apply


async def test_a_system_wide_rule_applies_to_every_mailbox(journal: Journal) -> None:
    async with open_actor_system() as system:
        for key in "ab":
            system.spawn(addr(key), worker(journal))
        system.add_rule(DropNotes())
        for key in "ab":
            await system.tell(addr(key), Note(text="hi"))
        await wait_all_tasks_blocked()

        assert journal.handled("a") == journal.handled("b") == []
        assert system.statistics().dead_letters == 2


async def test_a_per_mailbox_rule_applies_only_to_its_mailbox(journal: Journal) -> None:
    async with open_actor_system() as system:
        for key in "ab":
            system.spawn(addr(key), worker(journal))
        system.add_rule(DropNotes(), at=addr("a"))
        for key in "ab":
            await system.tell(addr(key), Note(text="hi"))
        await wait_all_tasks_blocked()

        assert journal.handled("a") == []
        assert journal.handled("b") == [("hi", 1)]


async def test_system_wide_rules_decide_before_per_mailbox_rules(tap: MemoryTap) -> None:
    async with open_actor_system(taps=[tap]) as system:
        system.add_rule(DropNotes(reason="local"), at=addr("a"))
        system.add_rule(DropNotes(reason="global"))
        await system.tell(addr("a"), Note(text="who decides?"))

        assert [e.reason for e in tap.of_type(DeadLetter)] == ["global"]


async def test_a_removed_rule_no_longer_decides(journal: Journal) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        rule = DropNotes()
        system.add_rule(rule)
        system.remove_rule(rule)
        await system.tell(addr("a"), Note(text="hi"))
        await wait_all_tasks_blocked()

        assert journal.handled("a") == [("hi", 1)]


async def test_a_message_to_an_unknown_address_is_dead_lettered_as_undeliverable(
    tap: MemoryTap,
) -> None:
    async with open_actor_system(taps=[tap]) as system:
        await system.tell(addr("ghost"), Note(text="boo"))

    [dead] = tap.of_type(DeadLetter)
    assert dead.cause is DeadLetterCause.UNDELIVERABLE
    assert dead.reason == "no actor at worker:ghost"


@attrs.define
class CountingRule:
    """Delivers everything and counts which payload kinds it was shown."""

    payloads: tuple[type, ...] | None = None
    shown: list[str] = attrs.Factory(list)

    def decide(self, envelope: Envelope, facts: Facts) -> Decision:
        self.shown.append(type(envelope.payload).__name__)
        return DELIVER


@attrs.define
class CountingObserver:
    payloads: tuple[type, ...] | None = None
    shown: list[str] = attrs.Factory(list)

    def observe(self, envelope: Envelope, facts: Facts) -> Mapping[str, Any] | None:
        self.shown.append(type(envelope.payload).__name__)
        return None


async def test_a_rule_that_declares_its_payloads_is_consulted_only_for_them(
    journal: Journal,
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        notes_only, everything = CountingRule(payloads=(Note,)), CountingRule()
        system.add_rule(notes_only)
        system.add_rule(everything, at=addr("a"))
        await system.tell(addr("a"), Note(text="hi"))
        await system.tell(addr("a"), Echo(text="hi"))

        assert notes_only.shown == ["Note"]
        assert everything.shown == ["Note", "Echo"]


async def test_a_rule_added_later_is_consulted_for_payloads_routed_before(
    journal: Journal,
) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        await system.tell(addr("a"), Note(text="before"))
        rule = CountingRule(payloads=(Note,))
        system.add_rule(rule)
        await system.tell(addr("a"), Note(text="after"))

        assert rule.shown == ["Note"]


async def test_an_observer_that_declares_its_payloads_sees_only_them(journal: Journal) -> None:
    async with open_actor_system() as system:
        system.spawn(addr("a"), worker(journal))
        echoes_only, everything = CountingObserver(payloads=(Echo,)), CountingObserver()
        system.add_observer(echoes_only)
        system.add_observer(everything)
        await system.tell(addr("a"), Note(text="hi"))
        await system.tell(addr("a"), Echo(text="hi"))

        assert echoes_only.shown == ["Echo"]
        assert everything.shown == ["Note", "Echo"]
