"""Whatever breaks inside a run ends it as ``failed`` with a ``failure_reason``, never as an
exception out of ``run()`` or ``open_run``: the run's supervisor giving up (too many
restarts), an actor that cannot start, a log that cannot be created."""

from __future__ import annotations

from pathlib import Path

import trio

from conclave.actors.coordination.events import AnswerAdded
from conclave.actors.run.driver import BUS, COORDINATOR, RunSpec, open_run, run
from conclave.actors.run.events import RunEnded
from conclave.actors.run.result import DecidedBy, Termination
from conclave.runtime import Address, Envelope
from tests.coordination.faults import CrashAfter
from tests.coordination.helpers import RUN_LIMIT, TASK, WaitingTap, agent, config, run_tapped

CFG = config(agent("a", seed=1, latency=1.0), agent("b", seed=2, latency=1.0))


def _always(envelope: Envelope) -> bool:
    return True


class _CannotStart:
    """The bus crashes in ``started()``: it can never run."""

    def crash_after(self, actor: Address, envelope: Envelope) -> str | None:
        return None

    def crash_on_start(self, actor: Address, incarnation: int) -> str | None:
        return "the bus cannot start" if actor == BUS else None


async def test_a_run_whose_supervisor_gives_up_ends_failed_with_the_reason(
    autojump_clock: object,
) -> None:
    # The coordinator crashes after every message it handles: four restarts in no time.
    run = await run_tapped(CFG, faults=CrashAfter(COORDINATOR, _always, times=1000))

    assert run.result.termination is Termination.FAILED
    reason = run.result.failure_reason or ""
    assert reason.startswith("RestartIntensityExceeded: supervisor run exceeded 3 restarts")
    assert "InjectedCrash" in reason
    [ended] = run.events(RunEnded)
    assert ended.termination == "failed"
    assert ended.failure_reason == reason


async def test_a_failed_run_keeps_the_best_answer_so_far(autojump_clock: object) -> None:
    tap = WaitingTap()
    cfg = config(agent("a", seed=1, latency=1.0), agent("b", seed=2, latency=60.0))
    with trio.fail_after(RUN_LIMIT):
        async with open_run(RunSpec(task=TASK, config=cfg), taps=[tap]) as handle:
            await tap.wait_for(AnswerAdded)
            handle.fail("the machinery broke")
            result = await handle.result()

    assert result.termination is Termination.FAILED
    assert result.failure_reason == "the machinery broke"
    assert [a.agent for a in result.answers] == ["a"]
    assert result.final_answer == result.answers[0].content
    assert result.decided_by is DecidedBy.FAILED_BEST_SO_FAR


async def test_an_actor_that_cannot_start_fails_the_run_with_the_reason(
    autojump_clock: object,
) -> None:
    run = await run_tapped(CFG, faults=_CannotStart())

    assert run.result.termination is Termination.FAILED
    reason = run.result.failure_reason or ""
    assert "bus" in reason
    assert "the bus cannot start" in reason


async def test_open_run_does_not_raise_when_the_run_fails(autojump_clock: object) -> None:
    spec = RunSpec(task=TASK, config=CFG, faults=CrashAfter(COORDINATOR, _always, times=1000))
    with trio.fail_after(RUN_LIMIT):
        async with open_run(spec) as handle:
            result = await handle.result()

    assert result.termination is Termination.FAILED


async def test_a_run_that_cannot_create_its_log_is_a_failed_result(tmp_path: Path) -> None:
    (tmp_path / "events.jsonl").write_text("an earlier run's log\n")

    result = await run(RunSpec(task=TASK, config=CFG, log_dir=tmp_path))

    assert result.termination is Termination.FAILED
    assert (result.failure_reason or "").startswith("the run could not start: EventLogExists")
    assert result.final_answer is None
    assert (tmp_path / "events.jsonl").read_text() == "an earlier run's log\n"
