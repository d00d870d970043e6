"""Watching a real run through its hub: any number of subscribers, none of which can slow it
or break it, and a live RunView equal to the one replay rebuilds from the event log.

Runs are scripted and timed on the autojump clock, so "the run took as long" is exact."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import trio
import trio.testing

from conclave.actors.coordination.events import AnswerAdded, RunStarted
from conclave.actors.events import DomainEvent, DropCause, EventHub, SubscriberDropped
from conclave.actors.events.view import RunPhase, RunView
from conclave.actors.run.driver import RunSpec, open_run
from conclave.actors.run.events import RunEnded
from conclave.actors.run.result import RunResult
from conclave.config.schema import (
    AgentConfig,
    ConclaveConfig,
    OrchestratorConfig,
    ScriptedBackendConfig,
)
from conclave.runtime import Event, read_event_log

TASK = "Name three uses of a paperclip"


def spec(log_dir: Path | None = None, agents: int = 4) -> RunSpec:
    """Agents with distinct latencies and two answers each: votes get cast and cleared."""
    members = tuple(
        AgentConfig(
            id=f"a{i}",
            backend=ScriptedBackendConfig(seed=i, latency=0.2, jitter=0.5, answers=2),
        )
        for i in range(1, agents + 1)
    )
    config = ConclaveConfig(agents=members, orchestrator=OrchestratorConfig())
    return RunSpec(task=TASK, config=config, log_dir=log_dir)


async def run_watched(
    run_spec: RunSpec, watch: Callable[[EventHub], object] = lambda hub: None
) -> tuple[RunResult, float]:
    """Run with a hub that ``watch`` subscribes to; the result and the virtual duration."""
    hub = EventHub()
    with hub:
        watch(hub)
        started = trio.current_time()
        async with open_run(run_spec, taps=[hub]) as handle:
            hub.bind(handle.system.record)
            result = await handle.result()
    return result, trio.current_time() - started


async def test_a_subscriber_that_raises_on_answer_added_is_removed_and_the_run_completes(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    def fail_on_answers(event: Event) -> None:
        if isinstance(event, AnswerAdded):
            raise RuntimeError("renderer bug")

    result, _ = await run_watched(
        spec(tmp_path), lambda hub: hub.subscribe_sync(fail_on_answers, name="broken UI")
    )

    assert result.termination == "completed"
    assert result.final_answer is not None
    [dropped] = [
        e for e in read_event_log(tmp_path / "events.jsonl").events if type(e) is SubscriberDropped
    ]
    assert (dropped.subscriber, dropped.cause) == ("broken UI", DropCause.RAISED)
    assert dropped.detail == "RuntimeError: renderer bug"


async def test_other_subscribers_see_the_whole_run_when_one_raises(
    autojump_clock: trio.testing.MockClock,
) -> None:
    seen: list[DomainEvent] = []

    def broken(event: Event) -> None:
        raise RuntimeError("renderer bug")

    def watch(hub: EventHub) -> None:
        hub.subscribe_sync(broken)
        hub.subscribe_sync(seen.append)

    await run_watched(spec(), watch)

    assert isinstance(seen[0], RunStarted)
    assert isinstance(seen[-1], RunEnded)


async def test_a_subscriber_that_never_reads_is_dropped_and_the_run_takes_as_long(
    autojump_clock: trio.testing.MockClock,
) -> None:
    subscriptions = []

    def never_read(hub: EventHub) -> None:
        subscriptions.append(hub.subscribe(buffer=8))

    unwatched, alone = await run_watched(spec())
    watched, with_stuck_reader = await run_watched(spec(), never_read)

    assert with_stuck_reader == alone
    assert watched.llm_calls == unwatched.llm_calls
    assert watched.termination == "completed"
    [subscription] = subscriptions
    assert subscription.dropped is not None
    assert subscription.dropped.cause is DropCause.FELL_BEHIND


async def test_a_subscriber_that_reads_too_slowly_is_dropped_and_the_run_takes_as_long(
    autojump_clock: trio.testing.MockClock,
) -> None:
    read: list[Event] = []
    subscriptions = []

    _, alone = await run_watched(spec())
    async with trio.open_nursery() as nursery:

        def slow_reader(hub: EventHub) -> None:
            subscription = hub.subscribe(buffer=4)
            subscriptions.append(subscription)

            async def read_slowly() -> None:
                async for event in subscription:
                    read.append(event)
                    await trio.sleep(1.0)

            nursery.start_soon(read_slowly)

        _, watched = await run_watched(spec(), slow_reader)

    assert watched == alone
    assert subscriptions[0].dropped is not None
    assert 4 <= len(read) < 20


async def test_any_number_of_subscribers_each_see_every_domain_event_in_order(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    streams: list[list[Event]] = [[] for _ in range(5)]
    async with trio.open_nursery() as nursery:

        def readers(hub: EventHub) -> None:
            for stream in streams:
                subscription = hub.subscribe(buffer=10_000)

                async def read(
                    subscription: trio.abc.ReceiveChannel[Event] = subscription,
                    into: list[Event] = stream,
                ) -> None:
                    async for event in subscription:
                        into.append(event)

                nursery.start_soon(read)

        await run_watched(spec(tmp_path), readers)

    logged = [
        e for e in read_event_log(tmp_path / "events.jsonl").events if isinstance(e, DomainEvent)
    ]
    # The log keeps the durable events; the ephemeral ones (text deltas) are live only.
    assert all([e for e in stream if not e.ephemeral] == logged for stream in streams)
    assert all(any(e.ephemeral for e in stream) for stream in streams)


@pytest.mark.parametrize("agents", [1, 4])
async def test_a_run_view_reduced_from_the_event_log_equals_the_live_one(
    autojump_clock: trio.testing.MockClock, tmp_path: Path, agents: int
) -> None:
    live = RunView()
    await run_watched(spec(tmp_path, agents), lambda hub: hub.subscribe_sync(live.apply))

    replayed = RunView.from_events(read_event_log(tmp_path / "events.jsonl").events)

    assert replayed == live
    assert live.phase is RunPhase.ENDED
    assert live.winner is not None
    assert len(live.answers) >= agents
    assert sum(a.llm_calls for a in live.agents.values()) > agents


async def test_a_live_view_fed_through_a_channel_equals_the_replayed_one(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    live = RunView()
    async with trio.open_nursery() as nursery:

        def feed(hub: EventHub) -> None:
            subscription = hub.subscribe(buffer=10_000)

            async def apply_all() -> None:
                async for event in subscription:
                    live.apply(event)

            nursery.start_soon(apply_all)

        await run_watched(spec(tmp_path), feed)

    assert RunView.from_events(read_event_log(tmp_path / "events.jsonl").events) == live
