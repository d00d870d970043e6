"""The REPL's garbage collection: never while a run executes or a person types.

A cyclic collection stops every thread, the UI's too. In a 200-agent all-to-all run an
automatic one took 0.6-1.0 s (the run's several hundred thousand objects scanned): key echo
froze that long, and keys typed meanwhile arrived together, as a paste. (An ended run leaves
no cycles now, so its objects go by reference counting as it ends; before, some 77,000 of
them waited for a 0.3 s pass.) So for the session
the collector runs only when asked: :class:`IdleCollection` asks once nothing runs and no key
has come for :data:`QUIET_S`, if enough was allocated since the last pass. Reference counting
still frees almost everything at once; what the collector finds waits until then. The objects
alive once the runtime is loaded (modules, classes) are frozen out of every pass.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["CHECK_S", "MIN_ALLOCATED", "QUIET_S", "IdleCollection", "idle_collection"]

QUIET_S = 1.0
"""Seconds without a key (and with no run) before a pass."""
CHECK_S = 0.25
"""How often the UI's loop looks whether a pass is due."""
MIN_ALLOCATED = 10_000
"""Objects allocated (net) since the last pass, at least, for another to be worth it."""


class IdleCollection:
    """See the module docstring; :func:`idle_collection` owns one."""

    def __init__(self, loop: asyncio.AbstractEventLoop, busy: Callable[[], bool]) -> None:
        self._loop = loop
        self._busy = busy
        self._last_key = time.monotonic()
        self._timer: asyncio.TimerHandle | None = None

    def key(self) -> None:
        """A key came: a pass waits for the next quiet stretch."""
        self._last_key = time.monotonic()

    def freeze(self) -> None:
        """Leave what is alive now (the loaded runtime) out of every pass."""
        gc.freeze()

    def _check(self) -> None:
        quiet = time.monotonic() - self._last_key >= QUIET_S
        if quiet and not self._busy() and gc.get_count()[0] >= MIN_ALLOCATED:
            gc.collect()
        self._timer = self._loop.call_later(CHECK_S, self._check)

    def _start(self) -> None:
        self._timer = self._loop.call_later(CHECK_S, self._check)

    def _stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()


@contextmanager
def idle_collection(
    loop: asyncio.AbstractEventLoop, busy: Callable[[], bool]
) -> Iterator[IdleCollection]:
    """Automatic collection off and idle passes on, until the block ends; then as before
    (frozen objects thawed)."""
    collection = IdleCollection(loop, busy)
    enabled = gc.isenabled()
    gc.disable()
    collection._start()
    try:
        yield collection
    finally:
        collection._stop()
        gc.unfreeze()
        if enabled:
            gc.enable()
