"""Redraws: the runtime's changes at most every 50 ms, however fast they come."""

from __future__ import annotations

import asyncio
import itertools
import time
from pathlib import Path

from prompt_toolkit.application import Application

from conclave.ui.repl.app import REDRAW_INTERVAL
from tests.repl.harness import Session, play


def test_changes_are_drawn_at_most_once_per_redraw_interval(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        frames: list[float] = []

        def drawn(_app: Application[None]) -> None:
            frames.append(time.monotonic())

        session.repl.app.after_render += drawn
        loop = asyncio.get_running_loop()
        end = loop.time() + 0.5
        while loop.time() < end:  # a change every millisecond, as a big run's events come
            session.state.on_change()
            await asyncio.sleep(0.001)
        await asyncio.sleep(REDRAW_INTERVAL * 2)  # the last change is drawn too
        gaps = [later - earlier for earlier, later in itertools.pairwise(frames)]
        assert len(frames) >= 2
        assert min(gaps) >= REDRAW_INTERVAL * 0.9

    play(scenario, tmp_path)
