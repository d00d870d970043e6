"""Claims: how lanes get job indices, each index once, until none are left.

Separate from the lanes (and free of trio) because a worker process unpickles its
:class:`SharedCounter` while it starts, before anything else is imported; see
:mod:`actors.batch.worker`.
"""

from __future__ import annotations

from multiprocessing.context import BaseContext
from typing import Protocol

__all__ = ["Claims", "Counter", "SharedCounter"]


class Claims(Protocol):
    """Hands out job indices, each once, until exhausted or closed."""

    def claim(self) -> int | None:
        """The next index, or ``None`` when there is nothing left to start."""
        ...

    def close(self) -> None:
        """Start nothing more: every later :meth:`claim` returns ``None``."""
        ...


class Counter:
    """Claims for lanes in one process: ``0 .. total - 1`` in order."""

    def __init__(self, total: int) -> None:
        self.total = total
        self._next = 0

    def claim(self) -> int | None:
        if self._next >= self.total:
            return None
        self._next += 1
        return self._next - 1

    def close(self) -> None:
        self._next = self.total


class SharedCounter:
    """Claims shared by processes: one integer in shared memory behind its lock. Pass it to
    :class:`multiprocessing.Process` as an argument (it travels only while spawning)."""

    def __init__(self, total: int, context: BaseContext) -> None:
        self.total = total
        self._next = context.Value("q", 0)

    def claim(self) -> int | None:
        with self._next.get_lock():
            i = int(self._next.value)
            if i >= self.total:
                return None
            self._next.value = i + 1
        return i

    def close(self) -> None:
        with self._next.get_lock():
            self._next.value = self.total

    @property
    def claimed(self) -> int:
        """How many indices have been handed out (``total`` once closed)."""
        with self._next.get_lock():
            return min(int(self._next.value), self.total)
