"""A run builds a ``Delivered`` event only for a tap that hears plain deliveries: its own taps
(statistics, usage, a log without deliveries) decline them, so a headless run builds one only
for the delivery that ends a hold, which a log pairs with its release."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conclave.actors.run.driver import RunSpec, run
from conclave.runtime import Delivered, MemoryTap, Released, asks, router
from tests.events.test_watch_run import spec


class _Counted:
    """Counts the ``Delivered`` and ``Released`` events the kernel builds."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.delivered = 0
        self.released = 0

        def delivered(**fields: Any) -> Delivered:
            self.delivered += 1
            return Delivered(**fields)

        def released(**fields: Any) -> Released:
            self.released += 1
            return Released(**fields)

        for module in (router, asks):
            monkeypatch.setattr(module, "Delivered", delivered)
        monkeypatch.setattr(router, "Released", released)


async def test_a_logged_run_builds_a_delivery_only_after_a_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = _Counted(monkeypatch)

    result = await run(RunSpec(task="t", config=spec().config, log_dir=tmp_path / "run"))

    assert result.termination == "completed"
    assert counted.released > 0
    assert counted.delivered <= counted.released


async def test_a_tap_that_hears_deliveries_gets_every_one_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counted, tap = _Counted(monkeypatch), MemoryTap()

    result = await run(RunSpec(task="t", config=spec().config), taps=[tap])

    assert counted.delivered == len(tap.of_type(Delivered)) >= result.messages_routed // 2
