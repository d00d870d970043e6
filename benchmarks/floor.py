"""The floor of a big ring run: its messages and waits in bare trio, nothing else.

Issue 24 asks a 1,000-agent ring run for at most 1.2 times its ideal and a 10,000-agent one
for at most 3 times. Both runs are CPU-bound on one core, so how close a runtime can get
depends on what the machine does per agent at the very least. This measures that least:
each agent a trio task with an unbounded memory channel for a mailbox, a coordinator task
and a bus task like Conclave's, and the messages of a Conclave ring run, 11 per agent: start;
the answer and its verdict; the answer to the bus, which sends each ring neighbour one update
per burst; "you may vote", held (like Conclave's routing rule) until no answer has been
accepted for the quiet period, counted from the acceptance; the snapshot asked for and sent;
the vote and its verdict; stop. Then one agent presents (asked, and answering). Every agent
makes the same model calls (an answer, a vote, and one presentation) of L ±50 %. Messages are
tuples; there are no types, no routing rules, no events, no log, no supervision, no prompts,
no model: whatever a runtime does on top costs more.

The ideal is this same program on trio's virtual clock (as ``conclave bench`` takes a run's
ideal), so its ratio is the floor's own; its CPU per agent is what a core must spend per
agent whatever the runtime, against which Conclave's is compared.
"""

from __future__ import annotations

import enum
import math
import random
import time
from typing import Any

import trio
import trio.testing

__all__ = ["FloorRun", "floor_run", "measure_floor"]

JITTER = 0.5
"""As the load benchmark's scripted agents: each call takes L times (1 ± 0.5)."""

PRESENTER = 0
"""The agent that presents once every agent has voted."""


class _Kind(enum.Enum):
    START = enum.auto()
    ANSWER = enum.auto()
    ANSWER_VERDICT = enum.auto()
    ACCEPTED = enum.auto()
    UPDATE = enum.auto()
    VOTING_OPEN = enum.auto()
    SNAPSHOT_REQUEST = enum.auto()
    SNAPSHOT = enum.auto()
    VOTE = enum.auto()
    VOTE_VERDICT = enum.auto()
    PRESENT = enum.auto()
    PRESENTATION = enum.auto()
    STOP = enum.auto()


_Message = tuple[_Kind, int]
"""A kind and the agent it is from or about."""


class FloorRun:
    """One run of the floor: ``agents`` in a ring, ``latency`` per call, ``quiet`` seconds of
    no accepted answer before the updates and the held "you may vote" go out."""

    def __init__(self, agents: int, latency: float, quiet: float) -> None:
        self.agents = agents
        self.quiet = quiet
        self.hops = 0
        """Messages sent, every one of them received."""
        self._delays = [_delays(i, latency) for i in range(agents)]
        self._boxes = [trio.open_memory_channel[_Message](math.inf) for _ in range(agents)]
        self._coordinator = trio.open_memory_channel[_Message](math.inf)
        self._bus = trio.open_memory_channel[_Message](math.inf)
        self._held: list[int] = []
        """Agents whose "you may vote" waits for answers to go quiet."""
        self._quiet_at = -math.inf
        """When answers go quiet: the quiet period after the latest acceptance."""

    async def run(self) -> None:
        """Start every agent, and return once every agent has voted, the presenter has
        presented and every agent has stopped."""
        async with trio.open_nursery() as nursery:
            for agent in range(self.agents):
                nursery.start_soon(self._agent, agent)
            nursery.start_soon(self._bus_loop)
            for agent in range(self.agents):
                self._send_to_agent(agent, _Kind.START)
            await self._coordinator_loop()

    def _send_to_agent(self, agent: int, kind: _Kind) -> None:
        self._send(self._boxes[agent][0], kind, agent)

    def _send_to_coordinator(self, kind: _Kind, agent: int) -> None:
        self._send(self._coordinator[0], kind, agent)

    def _send(self, box: trio.MemorySendChannel[_Message], kind: _Kind, agent: int) -> None:
        self.hops += 1
        box.send_nowait((kind, agent))

    async def _agent(self, agent: int) -> None:
        """Verdicts and updates are taken and ignored: the model sees answers in the
        snapshot its vote asks for."""
        answer_delay, vote_delay, present_delay = self._delays[agent]
        async for kind, _ in self._boxes[agent][1]:
            if kind is _Kind.START:
                await trio.sleep(answer_delay)  # the answer's model call
                self._send_to_coordinator(_Kind.ANSWER, agent)
            elif kind is _Kind.VOTING_OPEN:
                self._send_to_coordinator(_Kind.SNAPSHOT_REQUEST, agent)
            elif kind is _Kind.SNAPSHOT:
                await trio.sleep(vote_delay)  # the vote's model call
                self._send_to_coordinator(_Kind.VOTE, agent)
            elif kind is _Kind.PRESENT:
                await trio.sleep(present_delay)  # the presentation's model call
                self._send_to_coordinator(_Kind.PRESENTATION, agent)
            elif kind is _Kind.STOP:
                return

    async def _coordinator_loop(self) -> None:
        voted = 0
        async for kind, agent in self._coordinator[1]:
            if kind is _Kind.ANSWER:
                self._send_to_agent(agent, _Kind.ANSWER_VERDICT)
                # Routing the answer to the bus marks answers as arriving (Conclave's
                # quiet-period fact), and "you may vote" is held behind it.
                self._quiet_at = trio.current_time() + self.quiet
                self._send(self._bus[0], _Kind.ACCEPTED, agent)
                self._held.append(agent)
            elif kind is _Kind.SNAPSHOT_REQUEST:
                self._send_to_agent(agent, _Kind.SNAPSHOT)
            elif kind is _Kind.VOTE:
                self._send_to_agent(agent, _Kind.VOTE_VERDICT)
                voted += 1
                if voted == self.agents:
                    self._send_to_agent(PRESENTER, _Kind.PRESENT)
            elif kind is _Kind.PRESENTATION:
                break
        for agent in range(self.agents):
            self._send_to_agent(agent, _Kind.STOP)

    async def _bus_loop(self) -> None:
        """Each answer's ring neighbours are sent one update per burst, and the held "you
        may vote" are released, once answers have been quiet for the quiet period."""
        receive = self._bus[1]
        updates: set[int] = set()
        released = 0
        while released < self.agents or updates or receive.statistics().current_buffer_used:
            burst = updates or self._held
            with trio.move_on_at(self._quiet_at if burst else math.inf):
                _, agent = await receive.receive()
                updates.update(((agent - 1) % self.agents, (agent + 1) % self.agents))
                continue
            if trio.current_time() < self._quiet_at:
                continue  # an answer came in meanwhile: the burst goes on
            for neighbour in sorted(updates):
                self._send_to_agent(neighbour, _Kind.UPDATE)
            for agent in self._held:
                self._send_to_agent(agent, _Kind.VOTING_OPEN)
            released += len(self._held)
            updates.clear()
            self._held.clear()


def _delays(agent: int, latency: float) -> tuple[float, float, float]:
    """The agent's answer, vote and presentation calls."""
    draw = random.Random(agent)
    answer, vote, present = (latency * (1 + draw.uniform(-JITTER, JITTER)) for _ in range(3))
    return answer, vote, present


def floor_run(agents: int, latency: float, quiet: float) -> tuple[float, float, int]:
    """One run on the real clock, in a fresh ``trio.run``: its wall and CPU seconds and its
    hops."""
    run = FloorRun(agents, latency, quiet)
    started, cpu_started = time.perf_counter(), time.process_time()
    trio.run(run.run)
    return time.perf_counter() - started, time.process_time() - cpu_started, run.hops


def _ideal(agents: int, latency: float, quiet: float) -> float:
    """The same run on a virtual clock, where every step but the waits takes no time."""

    async def timed() -> float:
        started = trio.current_time()
        await FloorRun(agents, latency, quiet).run()
        return trio.current_time() - started

    return trio.run(timed, clock=trio.testing.MockClock(autojump_threshold=0))


def measure_floor(agents: int, latency: float, quiet: float, repeats: int) -> dict[str, Any]:
    """``repeats`` runs of the floor; the figures of the median by wall time."""
    runs = sorted(floor_run(agents, latency, quiet) for _ in range(repeats))
    median = runs[len(runs) // 2]
    # Rounded first, so that the row's ratios follow from the figures it shows.
    wall, cpu, ideal = (
        round(median[0], 3),
        round(median[1], 3),
        round(_ideal(agents, latency, quiet), 3),
    )
    return {
        "agents": agents,
        "latency": latency,
        "quiet": quiet,
        "repeats": repeats,
        "wall_s": wall,
        "cpu_s": cpu,
        "ideal_s": ideal,
        "wall_over_ideal": round(wall / ideal, 2),
        "cpu_us_per_agent": round(cpu / agents * 1e6, 1),
        "hops_per_agent": round(median[2] / agents, 1),
    }
