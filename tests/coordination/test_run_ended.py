"""``run_ended`` is the last event of a run: the log's last line, and the last event any tap
hears. The shutdown that follows (actors stopping, mail dead-lettered) is neither written
nor heard, however the run ended."""

from __future__ import annotations

from pathlib import Path

import trio

from conclave.actors.coordination.events import AnswerAdded
from conclave.actors.llm.protocol import Completion, CompletionRequest, CompletionSink, LLMBackend
from conclave.actors.run.driver import RunSpec, build_backend, open_run
from conclave.actors.run.events import RunEnded
from conclave.config.schema import AgentConfig
from conclave.runtime import Event, MemoryTap, read_event_log
from tests.coordination.helpers import TASK, WaitingTap, agent, config, run_tapped

CFG = config(agent("a", seed=1, latency=1.0), agent("b", seed=2, latency=1.0))


def _log(tmp_path: Path) -> list[Event]:
    return list(read_event_log(tmp_path / "events.jsonl").events)


async def test_run_ended_is_the_last_line_of_a_completed_runs_log(
    autojump_clock: object, tmp_path: Path
) -> None:
    await run_tapped(CFG, log_dir=tmp_path)

    events = _log(tmp_path)
    assert isinstance(events[-1], RunEnded)
    assert events[-1].termination == "completed"
    assert len([e for e in events if isinstance(e, RunEnded)]) == 1


async def test_run_ended_is_the_last_line_of_a_cancelled_runs_log(
    autojump_clock: object, tmp_path: Path
) -> None:
    tap = WaitingTap()
    cfg = config(agent("a", seed=1, latency=1.0), agent("b", seed=2, latency=60.0))
    async with open_run(RunSpec(task=TASK, config=cfg, log_dir=tmp_path), taps=[tap]) as h:
        await tap.wait_for(AnswerAdded)
        h.cancel()
        await h.result()

    events = _log(tmp_path)
    assert isinstance(events[-1], RunEnded)
    assert events[-1].termination == "cancelled"


async def test_run_ended_is_the_last_line_when_the_caller_is_cancelled(
    autojump_clock: object, tmp_path: Path
) -> None:
    cfg = config(agent("a", seed=1, latency=1.0), agent("b", seed=2, latency=60.0))
    with trio.move_on_after(5.0):
        async with open_run(RunSpec(task=TASK, config=cfg, log_dir=tmp_path)) as handle:
            await handle.result()

    events = _log(tmp_path)
    assert isinstance(events[-1], RunEnded)
    assert len([e for e in events if isinstance(e, RunEnded)]) == 1


async def test_no_tap_hears_anything_after_run_ended(autojump_clock: object) -> None:
    tap = MemoryTap()
    async with open_run(RunSpec(task=TASK, config=CFG), taps=[tap]) as handle:
        await handle.result()
        ended_at = len(tap.events)

    assert isinstance(tap.events[-1], RunEnded)
    assert len(tap.events) == ended_at


async def test_no_agent_starts_an_llm_call_after_a_cancelled_run_ended(
    autojump_clock: object,
) -> None:
    # Twenty agents mid-round when the run is cancelled: the shutdown that stops them one
    # by one (unheard after run_ended) must not let any of them start another call.
    recorder = _TimedRecorder()
    tap = WaitingTap()
    members = tuple(agent(f"a{i:02d}", seed=i, latency=1.0 + i) for i in range(20))
    spec = RunSpec(task=TASK, config=config(*members), backend_factory=recorder)
    async with open_run(spec, taps=[tap]) as handle:
        await tap.wait_for(AnswerAdded)
        handle.cancel()
        await handle.result()
        [ended] = tap.of_type(RunEnded)

    assert recorder.calls
    assert max(recorder.calls) <= ended.at


class _TimedRecorder:
    """A ``backend_factory`` that notes when each call starts, across all agents."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, member: AgentConfig) -> LLMBackend:
        return _Timed(build_backend(member), self.calls)


class _Timed:
    def __init__(self, inner: LLMBackend, calls: list[float]) -> None:
        self.inner = inner
        self.calls = calls

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        self.calls.append(trio.current_time())
        return await self.inner.complete(request)


class _RaisesOnRunEnded:
    name = "fragile"

    def record(self, event: Event) -> None:
        if isinstance(event, RunEnded):
            raise RuntimeError("the fragile tap broke")


async def test_a_tap_raising_on_run_ended_is_not_followed_by_its_failure(
    autojump_clock: object,
) -> None:
    # The kernel records TapFailed for the broken tap: after run_ended, so unheard.
    tap = MemoryTap()
    async with open_run(RunSpec(task=TASK, config=CFG), taps=[tap, _RaisesOnRunEnded()]) as h:
        await h.result()

    assert isinstance(tap.events[-1], RunEnded)
