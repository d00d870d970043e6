"""The run's timer, which a person's decision pauses.

``run_timeout`` counts from the run's start, but not while a human gate is deciding: a
person reading an override dialog never causes a timeout. Pauses nest (two gates open at
once pause the timer once) and are counted on trio's clock, so tests use virtual time.
"""

from __future__ import annotations

import trio

__all__ = ["RunClock"]


class RunClock:
    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout
        self.started = trio.current_time()
        self._paused_total = 0.0
        self._pauses = 0
        self._paused_at = 0.0
        self._changed = trio.Event()

    @property
    def paused(self) -> bool:
        return self._pauses > 0

    def pause(self) -> None:
        """Stop counting until the matching :meth:`resume`."""
        if self._pauses == 0:
            self._paused_at = trio.current_time()
            self._wake()
        self._pauses += 1

    def resume(self) -> None:
        if self._pauses == 0:
            raise RuntimeError("RunClock.resume() without a matching pause()")
        self._pauses -= 1
        if self._pauses == 0:
            self._paused_total += trio.current_time() - self._paused_at
            self._wake()

    def elapsed(self) -> float:
        """Seconds the run has counted towards its timeout."""
        now = self._paused_at if self.paused else trio.current_time()
        return now - self.started - self._paused_total

    async def expire(self) -> None:
        """Return when the run has counted ``timeout`` seconds (never, without a timeout).
        Cancellation just stops the wait."""
        if self.timeout is None:
            await trio.sleep_forever()
        while True:
            changed = self._changed
            if self.paused:
                await changed.wait()
                continue
            # An absolute deadline, compared as computed: a remaining time added to a large
            # clock reading can round to nothing and spin at one instant.
            deadline = self.started + self._paused_total + self.timeout
            if trio.current_time() >= deadline:
                return
            with trio.move_on_at(deadline):
                await changed.wait()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()
