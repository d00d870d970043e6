"""Fixtures of the backend tests: a loopback server per test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.llm.loopback import LoopbackServer, open_loopback_server


@pytest.fixture
async def server() -> AsyncIterator[LoopbackServer]:
    async with open_loopback_server() as running:
        yield running
