from __future__ import annotations

from typing import Any

import pytest
import trio

from conclave.runtime.eventlog import MemoryTap
from tests.runtime.helpers import Journal


@pytest.fixture
def tap() -> MemoryTap:
    return MemoryTap()


@pytest.fixture
def journal() -> Journal:
    return Journal()


@pytest.fixture
def reschedules(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each ``trio.lowlevel.reschedule`` was called KeyboardInterrupt-protected: a
    KeyboardInterrupt between taking a parked task off its queue and rescheduling it would
    leave that task parked forever (trio protects its own channels' and events' wakers)."""
    protected: list[bool] = []
    reschedule = trio.lowlevel.reschedule

    def recording(task: trio.lowlevel.Task, next_send: Any = None) -> None:
        protected.append(trio.lowlevel.currently_ki_protected())
        if next_send is None:
            reschedule(task)
        else:
            reschedule(task, next_send)

    monkeypatch.setattr(trio.lowlevel, "reschedule", recording)
    return protected
