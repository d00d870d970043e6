"""The floor of a big ring run: its messages and waits in bare trio, nothing else.

Issue 24 asks a 1,000-agent ring run for at most 1.2 times its ideal and a 10,000-agent one
for at most 3 times. Both runs are CPU-bound on one core, so how close a runtime can get
depends on what the machine does per agent at the very least. This measures that least:
each agent a trio task with an unbounded memory channel for a mailbox, a coordinator task
and a bus task like Conclave's, the same hops per agent as a Conclave ring run (start; the
answer and its verdict; the bus's update to each ring neighbour and "you may vote", held
until answers have been quiet for the quiet period; the snapshot asked for; the vote and
its verdict; stop) and the same two calls of the scripted model's latency, drawn with the
same ±50 % jitter. Messages are tuples; there are no types, no routing rules, no events,
no log, no supervision, no prompts, no model: whatever a runtime does on top costs more.

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


class _Kind(enum.Enum):
    START = enum.auto()
    ANSWER = enum.auto()
    ANSWER_VERDICT = enum.auto()
    ACCEPTED = enum.auto()
    UPDATE = enum.auto()
    OPEN = enum.auto()
    VOTING_OPEN = enum.auto()
    SNAPSHOT_REQUEST = enum.auto()
    SNAPSHOT = enum.auto()
    VOTE = enum.auto()
    VOTE_VERDICT = enum.auto()
    STOP = enum.auto()


_Message = tuple[_Kind, int]
"""A kind and the agent it is from or about."""


class FloorRun:
    """One run of the floor: ``agents`` in a ring, ``latency`` per call, ``quiet`` seconds of
    no answers before updates and "you may vote" go out."""

    def __init__(self, agents: int, latency: float, quiet: float) -> None:
        self.agents = agents
        self.quiet = quiet
        self.hops = 0
        """Messages sent, every one of them received."""
        self._delays = [_delays(i, latency) for i in range(agents)]
        self._boxes = [trio.open_memory_channel[_Message](math.inf) for _ in range(agents)]
        self._coordinator = trio.open_memory_channel[_Message](math.inf)
        self._bus = trio.open_memory_channel[_Message](math.inf)

    async def run(self) -> None:
        """Start every agent, and return once every agent has voted and stopped."""
        async with trio.open_nursery() as nursery:
            for agent in range(self.agents):
                nursery.start_soon(self._agent, agent)
            nursery.start_soon(self._bus_loop)
            for agent in range(self.agents):
                self._send_to_agent(agent, _Kind.START)
            await self._coordinator_loop()

    def _send_to_agent(self, agent: int, kind: _Kind) -> None:
        self.hops += 1
        self._boxes[agent][0].send_nowait((kind, agent))

    def _send_to_coordinator(self, kind: _Kind, agent: int) -> None:
        self.hops += 1
        self._coordinator[0].send_nowait((kind, agent))

    def _send_to_bus(self, kind: _Kind, agent: int) -> None:
        self.hops += 1
        self._bus[0].send_nowait((kind, agent))

    async def _agent(self, agent: int) -> None:
        answer_delay, vote_delay = self._delays[agent]
        seen = 0
        async for kind, _ in self._boxes[agent][1]:
            if kind is _Kind.START:
                await trio.sleep(answer_delay)  # the answer's model call
                self._send_to_coordinator(_Kind.ANSWER, agent)
            elif kind is _Kind.UPDATE:
                seen += 1
            elif kind is _Kind.VOTING_OPEN:
                self._send_to_coordinator(_Kind.SNAPSHOT_REQUEST, agent)
            elif kind is _Kind.SNAPSHOT:
                await trio.sleep(vote_delay)  # the vote's model call
                self._send_to_coordinator(_Kind.VOTE, agent)
            elif kind is _Kind.STOP:
                return

    async def _coordinator_loop(self) -> None:
        voted = 0
        async for kind, agent in self._coordinator[1]:
            if kind is _Kind.ANSWER:
                self._send_to_agent(agent, _Kind.ANSWER_VERDICT)
                self._send_to_bus(_Kind.ACCEPTED, agent)
                self._send_to_bus(_Kind.OPEN, agent)
            elif kind is _Kind.SNAPSHOT_REQUEST:
                self._send_to_agent(agent, _Kind.SNAPSHOT)
            elif kind is _Kind.VOTE:
                self._send_to_agent(agent, _Kind.VOTE_VERDICT)
                voted += 1
                if voted == self.agents:
                    break
        for agent in range(self.agents):
            self._send_to_agent(agent, _Kind.STOP)

    async def _bus_loop(self) -> None:
        """Updates for each answer's ring neighbours and "you may vote", held while answers
        arrive: sent once none has for the quiet period (Conclave's bus and its routing
        rule), an agent's updates of a burst as one message."""
        receive = self._bus[1]
        updates: set[int] = set()
        opens: list[int] = []
        deadline = math.inf
        delivered = 0
        while delivered < self.agents:
            with trio.move_on_at(deadline):
                kind, agent = await receive.receive()
                if kind is _Kind.ACCEPTED:
                    updates.update(((agent - 1) % self.agents, (agent + 1) % self.agents))
                    deadline = trio.current_time() + self.quiet
                else:
                    opens.append(agent)
                continue
            for neighbour in sorted(updates):
                self._send_to_agent(neighbour, _Kind.UPDATE)
            for opened in opens:
                self._send_to_agent(opened, _Kind.VOTING_OPEN)
            delivered += len(opens)
            updates.clear()
            opens.clear()
            deadline = math.inf


def _delays(agent: int, latency: float) -> tuple[float, float]:
    draw = random.Random(agent)
    return (
        latency * (1 + draw.uniform(-JITTER, JITTER)),
        latency * (1 + draw.uniform(-JITTER, JITTER)),
    )


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
