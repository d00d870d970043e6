from __future__ import annotations

import pytest

from conclave.runtime.eventlog import MemoryTap
from tests.runtime.helpers import Journal


@pytest.fixture
def tap() -> MemoryTap:
    return MemoryTap()


@pytest.fixture
def journal() -> Journal:
    return Journal()
