"""The REPL's trio side, on its own."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import trio
import trio.testing
from prompt_toolkit.formatted_text import StyleAndTextTuples

from conclave.actors.coordination.protocol import AnswerVerdict
from conclave.actors.events import EventHub
from conclave.actors.llm.pool import open_backends
from conclave.actors.run.driver import RunHandle
from conclave.config.resolver import ResolvedConfig
from conclave.runtime import SystemClosed
from conclave.ui.repl.live import LiveRun, RunSnapshot
from conclave.ui.repl.protocol import Continue, Override
from conclave.ui.repl.service import PUBLISH_INTERVAL, PUBLISH_SHARE, ReplService
from conclave.ui.repl.state import ReplState
from tests.repl.harness import config


class _EndedRun:
    """A run handle whose run has ended: nobody answers a decision any more."""

    async def override(self, presenter: str) -> AnswerVerdict:
        raise SystemClosed("the run's actor system is closed")

    async def continue_(self) -> AnswerVerdict:
        raise SystemClosed("the run's actor system is closed")


async def test_a_decision_that_reaches_an_ended_run_says_so(tmp_path: Path) -> None:
    state = ReplState(agents=("agent-1",))
    printed: list[StyleAndTextTuples] = []
    async with open_backends() as pool:
        with EventHub() as hub:
            service = ReplService(
                resolved=ResolvedConfig(base=config(1)),
                state=state,
                post=lambda change: change(),
                printer=printed.append,
                log_root=tmp_path,
                backends=pool,
                hub=hub,
            )
            ended: RunHandle = _EndedRun()  # type: ignore[assignment]
            for decision in (Override(agent="agent-1"), Continue()):
                state.notice = ""
                await service._decide(ended, decision)
                assert state.notice == "the run ended before the decision reached it"


class _DearLive(LiveRun):
    """A run whose every snapshot costs ``DEAR_S`` of real time, and that always changed."""

    def __init__(self) -> None:
        super().__init__(config(1))
        self.taken = 0

    def snapshot(self) -> RunSnapshot:
        self.taken += 1
        end = time.perf_counter() + DEAR_S
        while time.perf_counter() < end:
            pass
        snapshot = super().snapshot()
        self.changed = True
        return snapshot


DEAR_S = 0.02


async def test_dear_snapshots_are_published_less_often(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    posted: list[Callable[[], None]] = []
    async with open_backends() as pool:
        with EventHub() as hub:
            service = ReplService(
                resolved=ResolvedConfig(base=config(1)),
                state=ReplState(agents=("agent-1",)),
                post=posted.append,
                printer=lambda block: None,
                log_root=tmp_path,
                backends=pool,
                hub=hub,
            )
            live = _DearLive()
            with trio.move_on_after(2.0):
                await service._tick(live)
    # every DEAR_S / PUBLISH_SHARE = 0.2 s, not every PUBLISH_INTERVAL (0.05 s: 40 in 2 s)
    assert DEAR_S / PUBLISH_SHARE > PUBLISH_INTERVAL
    # At least DEAR_S each: a loaded machine makes a snapshot dearer, and the ticks fewer.
    assert 4 <= live.taken <= 11
    assert len(posted) == live.taken
