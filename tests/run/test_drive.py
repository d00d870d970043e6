"""``drive(spec, hub)``: the headless driver every front end shares. It passes the hub every
event and binds it before anything is spawned; it hands out the handle as soon as the run
exists; a multi-turn conversation is one ``drive`` per turn, each with the turns before it
as history; agents' transcripts go to the log directory."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path
from typing import Any

import pytest
import trio

from conclave.actors.agent.actor import AgentActor, AgentSetup
from conclave.actors.agent.transcript_log import TranscriptFile, read_transcripts
from conclave.actors.coordination.events import RunStarted
from conclave.actors.events import EventHub, SubscriberDropped
from conclave.actors.llm.protocol import ChatMessage
from conclave.actors.run.driver import LogFailureCallback, RunHandle, RunSpec, drive, run
from conclave.actors.run.events import RunEnded
from conclave.actors.run.result import Termination
from conclave.actors.run.turn import Turn
from conclave.config.modes import CollaborationMode
from conclave.runtime import ActorContext, Event, Flushing, JsonlEventLog, LogOpened, read_event_log
from conclave.runtime.eventlog import EventLogFailure
from tests.coordination.helpers import TASK, Recorder, agent, agents, config

CFG = config(agent("a", seed=1, latency=1.0), agent("b", seed=2, latency=1.0))


async def test_drive_runs_the_spec_to_its_end(autojump_clock: object) -> None:
    result = await drive(RunSpec(task=TASK, config=CFG))

    assert result.termination is Termination.COMPLETED
    assert result.final_answer is not None


async def test_the_hub_hears_every_event_of_the_run_up_to_run_ended(
    autojump_clock: object,
) -> None:
    heard: list[Event] = []
    with EventHub() as hub:
        hub.subscribe_sync(heard.append, (Event,))
        await drive(RunSpec(task=TASK, config=CFG), hub)

    assert any(isinstance(e, RunStarted) for e in heard)
    assert isinstance(heard[-1], RunEnded)


async def test_the_hub_is_bound_before_the_run_records_anything(
    autojump_clock: object, tmp_path: Path
) -> None:
    # A subscriber that raises on the very first event is dropped, and the hub records
    # that in the run: the drop reaches the run's log only if the hub was already bound.
    def broken(event: LogOpened) -> None:
        raise RuntimeError("cannot render")

    with EventHub() as hub:
        hub.subscribe_sync(broken, (LogOpened,), name="broken")
        await drive(RunSpec(task=TASK, config=CFG, log_dir=tmp_path), hub)

    logged = read_event_log(tmp_path / "events.jsonl").events
    [dropped] = [e for e in logged if isinstance(e, SubscriberDropped)]
    assert dropped.subscriber == "broken"


async def test_on_open_gets_the_handle_before_any_agent_starts(autojump_clock: object) -> None:
    heard: list[Event] = []

    def cancel_at_once(handle: RunHandle) -> None:
        handle.cancel()

    with EventHub() as hub:
        hub.subscribe_sync(heard.append, (RunStarted,))
        result = await drive(RunSpec(task=TASK, config=CFG), hub, on_open=cancel_at_once)

    assert result.termination is Termination.CANCELLED
    assert heard == []


async def test_cancelling_the_caller_of_drive_ends_the_run_cancelled_in_its_log(
    autojump_clock: object, tmp_path: Path
) -> None:
    slow = config(agent("a", seed=1, latency=60.0))
    with trio.move_on_after(5.0):
        await drive(RunSpec(task=TASK, config=slow, log_dir=tmp_path))

    [ended] = [e for e in read_event_log(tmp_path / "events.jsonl").events if type(e) is RunEnded]
    assert ended.termination == "cancelled"


async def test_on_log_failure_hears_once_that_the_log_stopped(
    autojump_clock: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full_disk(
        path: Path,
        *,
        on_failure: LogFailureCallback | None,
        flushing: Flushing,
        deliveries: bool,
    ) -> JsonlEventLog:
        return JsonlEventLog.writing_to(
            io.FileIO("/dev/full", "w"),
            path,
            on_failure=on_failure,
            flushing=flushing,
            deliveries=deliveries,
        )

    monkeypatch.setattr("conclave.actors.run.driver.JsonlEventLog", full_disk)
    failures: list[EventLogFailure] = []

    result = await drive(
        RunSpec(task=TASK, config=CFG, log_dir=tmp_path), on_log_failure=failures.append
    )

    assert result.termination is Termination.COMPLETED
    assert len(failures) == 1


async def test_a_second_turn_shows_the_first_to_every_agent_as_history(
    autojump_clock: object,
) -> None:
    first = await drive(RunSpec(task=TASK, config=CFG))
    assert first.final_answer is not None
    turn = Turn(task=TASK, final_answer=first.final_answer, winner=first.winner, run_id="turn-1")
    recorder = Recorder()

    await drive(
        RunSpec(task="Now make it shorter", config=CFG, history=(turn,), backend_factory=recorder)
    )

    for backend in recorder.backends.values():
        messages = backend.requests[0].messages
        assert messages[1:3] == (
            ChatMessage(role="user", content=TASK),
            ChatMessage(role="assistant", content=first.final_answer),
        )
        assert "Now make it shorter" in messages[3].content


async def test_each_agent_writes_its_transcript_to_the_run_transcript_file(
    autojump_clock: object, tmp_path: Path
) -> None:
    await drive(RunSpec(task=TASK, config=config(*agents(2, latency=1.0)), log_dir=tmp_path))

    lines = list(read_transcripts(tmp_path / "transcripts.jsonl"))
    for agent_id in ("a1", "a2"):
        own = [line for line in lines if line["agent"] == agent_id]
        assert own[0]["role"] == "system"
    assert not (tmp_path / "agents").exists()  # one file per run, not one per agent


async def test_a_run_that_ended_holds_none_of_its_transcripts_open(
    autojump_clock: object, tmp_path: Path
) -> None:
    await drive(RunSpec(task=TASK, config=config(*agents(2, latency=1.0)), log_dir=tmp_path))

    held = [path for path in _open_files() if path == str(tmp_path / "transcripts.jsonl")]
    assert held == []


def _open_files() -> list[str]:
    """The paths this process holds open (a descriptor closed while listing is skipped)."""
    paths = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            paths.append(os.readlink(f"/proc/self/fd/{fd}"))
    return paths


async def test_the_collaboration_mode_reaches_every_agent(
    autojump_clock: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    modes: dict[str, CollaborationMode] = {}

    class Noting(AgentActor):
        def __init__(self, context: ActorContext, *, setup: AgentSetup, **rest: Any) -> None:
            modes[setup.agent] = setup.mode
            super().__init__(context, setup=setup, **rest)

    monkeypatch.setattr("conclave.actors.run.driver.AgentActor", Noting)

    await drive(RunSpec(task=TASK, config=CFG, mode=CollaborationMode.PLAN))

    assert modes == {"a": CollaborationMode.PLAN, "b": CollaborationMode.PLAN}


async def test_run_tells_its_result_before_the_runs_actors_stop_and_returns_it_after(
    autojump_clock: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[object] = []
    close = TranscriptFile.close

    def closing(transcript: TranscriptFile) -> None:  # once every agent has stopped
        seen.append("actors stopped")
        close(transcript)

    monkeypatch.setattr(TranscriptFile, "close", closing)

    result = await run(RunSpec(task=TASK, config=CFG, log_dir=tmp_path), on_result=seen.append)

    assert seen == [result, "actors stopped"]
    assert result.termination is Termination.COMPLETED
