"""The InjectionBus on its own (a headline default): accepted answers that reach it together
go out to each agent as ONE update holding all of them, not one update per answer.

The bus runs in a real actor system with recorders at the agents' addresses. The answers
are put in its mailbox with ``tell_nowait`` in one step (no checkpoint between), so they
are queued together whatever order trio runs its tasks in; ``wait_all_tasks_blocked``
then lets the bus work through them and deliver before anything is looked at.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import attrs
import trio
from trio.testing import wait_all_tasks_blocked

from conclave.actors.coordination.bus import (
    AnswersArriving,
    BusState,
    InjectionBus,
    agent_address,
)
from conclave.actors.coordination.protocol import AnswerAccepted, AnswerUpdate
from conclave.actors.coordination.rules import QUIET
from conclave.actors.coordination.visibility import Visibility
from conclave.runtime import Actor, ActorContext, ActorSystem, Address, Envelope, open_actor_system

AGENTS = ("a", "b", "c", "d")
BUS = Address("bus", "test")


class Inbox(Actor):
    """Stands in for an agent: keeps every message it gets."""

    def __init__(self, context: ActorContext, got: list[object]) -> None:
        super().__init__(context)
        self._got = got

    async def handle(self, envelope: Envelope) -> None:
        self._got.append(envelope.payload)


@attrs.frozen
class Wired:
    system: ActorSystem
    inboxes: dict[str, list[object]]

    def updates(self, agent: str) -> list[AnswerUpdate]:
        return [m for m in self.inboxes[agent] if isinstance(m, AnswerUpdate)]


@asynccontextmanager
async def wired_bus(quiet: float | None = None) -> AsyncIterator[Wired]:
    """The bus (all-to-all, with the ``quiet`` period if given) and an inbox per agent, all
    idle."""
    inboxes: dict[str, list[object]] = {agent: [] for agent in AGENTS}
    state = BusState()
    async with open_actor_system(name="bus-test") as system:
        if quiet is not None:
            system.add_observer(AnswersArriving(state, quiet))
        for agent, got in inboxes.items():
            system.spawn(agent_address(agent), functools.partial(Inbox, got=got))
        system.spawn(
            BUS,
            lambda ctx: InjectionBus(
                ctx, visibility=Visibility("all", AGENTS), preview_chars=100, state=state
            ),
        )
        await wait_all_tasks_blocked()
        yield Wired(system, inboxes)


def accepted(agent: str) -> AnswerAccepted:
    return AnswerAccepted(agent=agent, label=f"{agent}.1", content=f"the answer of {agent}")


async def test_answers_that_reach_the_bus_together_reach_an_agent_as_one_update() -> None:
    async with wired_bus() as wired:
        for agent in ("a", "b", "c"):
            wired.system.tell_nowait(BUS, accepted(agent))
        await wait_all_tasks_blocked()

        [update] = wired.updates("d")
        assert [view.label for view in update.answers] == ["a.1", "b.1", "c.1"]
        # each of the others gets the two answers that are not its own, in one update too
        [to_a] = wired.updates("a")
        assert [view.label for view in to_a.answers] == ["b.1", "c.1"]


async def test_answers_that_reach_the_bus_apart_are_separate_updates() -> None:
    # The contrast: the bus holds nothing back once its mailbox is empty.
    async with wired_bus() as wired:
        for agent in ("a", "b", "c"):
            wired.system.tell_nowait(BUS, accepted(agent))
            await wait_all_tasks_blocked()

        assert [[view.label for view in u.answers] for u in wired.updates("d")] == [
            ["a.1"],
            ["b.1"],
            ["c.1"],
        ]


async def test_with_a_quiet_period_answers_arriving_apart_reach_an_agent_as_one_update_once_quiet(
    autojump_clock: object,
) -> None:
    # Sent sooner, each update would only be held until answers are quiet (HoldUntilQuiet).
    async with wired_bus(quiet=0.1) as wired:
        for agent in ("a", "b", "c"):
            wired.system.tell_nowait(BUS, accepted(agent))
            await trio.sleep(0.05)
        assert wired.updates("d") == []
        assert wired.system.facts.get(QUIET) is False

        await trio.sleep(0.1)

        [update] = wired.updates("d")
        assert [view.label for view in update.answers] == ["a.1", "b.1", "c.1"]
        assert wired.system.facts.get(QUIET) is True
