"""The UI never waits for the run: keys are handled while the runtime works, whatever it
does, and a frame costs the same whatever the run's size."""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
from prompt_toolkit.formatted_text import StyleAndTextTuples

from conclave.actors.events.view import RunView
from conclave.actors.llm.protocol import Completion, CompletionRequest, CompletionSink, LLMBackend
from conclave.actors.run.spec import build_backend
from conclave.config.schema import AgentConfig
from conclave.ui.repl import render
from conclave.ui.repl.collector import QUIET_S
from conclave.ui.repl.layout import ProgressBlock
from conclave.ui.repl.live import RunSnapshot
from conclave.ui.repl.render import fragments_text
from tests.repl.harness import Session, config, play

BUSY_S = 0.5
"""How long a backend keeps the runtime's thread busy with CPU work, in one step."""


class _Busy:
    """The scripted backend after a long stretch of CPU work that never yields (as one
    actor's step fanning answers out to hundreds of agents does), noting whether automatic
    collection was on meanwhile."""

    def __init__(self, inner: LLMBackend, collector: list[bool]) -> None:
        self.inner = inner
        self.collector = collector

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        self.collector.append(gc.isenabled())
        end = time.perf_counter() + BUSY_S
        while time.perf_counter() < end:
            pass
        return await self.inner.complete(request, sink=sink)


def _busy(collector: list[bool]) -> Callable[[AgentConfig], LLMBackend]:
    return lambda agent: _Busy(build_backend(agent), collector)


def test_the_ui_loop_keeps_running_while_the_run_computes(tmp_path: Path) -> None:
    gaps: list[float] = []

    async def scenario(session: Session) -> None:
        loop = asyncio.get_running_loop()
        before = session.state.usage.runs
        session.type("Name three uses of a paperclip")
        await session.until(lambda: session.state.running, "the run")
        while session.state.usage.runs == before and session.state.override is None:
            start = loop.time()
            await asyncio.sleep(0.001)
            gaps.append(loop.time() - start)
        await session.finish(before, "the run")

    play(scenario, tmp_path, conclave=config(1), backend_factory=_busy([]))
    assert sum(gaps) >= BUSY_S  # measured across the busy stretch
    assert max(gaps) < 0.1


@contextmanager
def _collections() -> Iterator[list[float]]:
    """When each cyclic collection began, while the block runs."""
    began: list[float] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            began.append(time.monotonic())

    gc.callbacks.append(seen)
    try:
        yield began
    finally:
        gc.callbacks.remove(seen)


def test_no_collection_runs_while_a_turn_runs(tmp_path: Path) -> None:
    collector: list[bool] = []
    during: list[int] = []

    async def scenario(session: Session) -> None:
        with _collections() as began:
            await session.result_of("Name three uses of a paperclip")
            during.append(len(began))

    play(scenario, tmp_path, conclave=config(1), backend_factory=_busy(collector))
    assert collector and not any(collector)  # automatic collection is off
    assert during == [0]
    assert gc.isenabled()  # as it was, once the session is over


def test_a_collection_waits_until_the_person_stops_typing(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        with _collections() as began:
            await session.result_of("Name three uses of a paperclip")
            typing_until = time.monotonic() + 2 * QUIET_S
            last_key = 0.0
            while time.monotonic() < typing_until:  # a key every 0.2 s
                session.press("x")
                last_key = time.monotonic()
                await asyncio.sleep(0.2)
            assert not began
            await session.until(lambda: began, "a collection once the keys stop")
            assert began[0] - last_key >= QUIET_S * 0.9

    play(scenario, tmp_path, conclave=config(3))


def test_a_frame_without_a_new_snapshot_reuses_the_progress_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn: list[object] = []
    real = render.progress_block

    def counting(*args: Any, **kwargs: Any) -> StyleAndTextTuples:
        drawn.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(render, "progress_block", counting)

    async def scenario(session: Session) -> None:
        await session.result_of("Name three uses of a paperclip")
        state = session.state
        live = state.live
        assert live is not None
        block = ProgressBlock()
        drawn.clear()  # the application's own frames during the run
        frames = [fragments_text(session.render(block)) for _ in range(20)]  # twenty keys
        assert len(drawn) == 1
        assert frames[0] == frames[-1]
        state.live = attrs.evolve(live)  # the next snapshot
        session.render(block)
        assert len(drawn) == 2

    play(scenario, tmp_path, conclave=config(3))


def test_a_frame_formats_the_snapshots_summary_without_going_over_the_agents(
    tmp_path: Path,
) -> None:
    view = RunView()
    for index in range(1, 1001):
        view._update(f"agent-{index}", llm_calls=1)
    summary = render.summarise(view)  # done on the runtime's thread, with the snapshot

    async def scenario(session: Session) -> None:
        state = session.state
        state.status = "Running"
        state.live = RunSnapshot(view=RunView(), progress=summary)  # no agents to go over
        shown = fragments_text(session.render(ProgressBlock()))
        assert "1,000 LLM calls" in shown
        assert "  agent-8  idle" in shown
        assert "… and 992 more: 992 idle" in shown

    play(scenario, tmp_path, conclave=config(1))
