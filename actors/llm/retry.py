"""How long to wait before trying a failed LLM request again: the one policy both retry
layers use, pure so that it is tested without a clock or a socket.

The two layers: a backend retries a request that failed quickly before its reply began (a
429, a 5xx, a lost connection: ``max_retries``), and a round tries again after a failed call
(``max_tries_per_round``). Each waits before the next go: exponential back-off with full
jitter (the n-th wait drawn uniformly from zero to ``initial * 2**(n-1)``, capped), so agents
that failed together do not come back together; a server's ``Retry-After`` is the least a
wait may be. A wait must fit in the time the caller has left (its effective deadline: the
call's, the round's and the run's limits): one that does not is not taken, and the caller
fails at once, saying how long the server asked (:func:`too_long`).
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Callable, Mapping

import attrs

__all__ = ["REQUEST_BACKOFF", "TRY_BACKOFF", "Backoff", "retry_after", "too_long"]


@attrs.frozen(kw_only=True)
class Backoff:
    """Exponential back-off with full jitter."""

    initial: float
    """The ceiling of the first wait, in seconds; each later ceiling doubles it."""
    cap: float
    """No ceiling is higher."""
    draw: Callable[[], float] = attrs.field(default=random.random, eq=False, repr=False)
    """A number in [0, 1): the jitter (tests give a fixed one)."""

    def ceiling(self, attempt: int) -> float:
        """The longest wait after the ``attempt``-th failure (from 1)."""
        return min(self.cap, self.initial * 2.0 ** min(max(attempt - 1, 0), 64))

    def wait(self, attempt: int, *, asked: float | None = None) -> float:
        """Seconds to wait after the ``attempt``-th failure: a draw under the ceiling, and
        at least what the server ``asked`` (its ``Retry-After``)."""
        drawn = self.draw() * self.ceiling(attempt)
        return drawn if asked is None else max(drawn, asked)


REQUEST_BACKOFF = Backoff(initial=0.5, cap=8.0)
"""Between a backend's attempts at one request: 0 to 0.5 s, 0 to 1 s, ... up to 8 s."""
TRY_BACKOFF = Backoff(initial=1.0, cap=30.0)
"""Between a round's tries after a failed call: 0 to 1 s, 0 to 2 s, ... up to 30 s."""


def too_long(asked: float, left: float) -> str | None:
    """Why a server's ``Retry-After`` of ``asked`` seconds cannot be honoured with ``left``
    seconds left before the caller's deadline; ``None`` when it can."""
    if asked <= left:
        return None
    return (
        f"the server asked to wait {asked:g}s before trying again (Retry-After), more than the "
        f"{max(left, 0.0):.0f}s left within this call's limits; try again later, or raise "
        "orchestrator.call_timeout"
    )


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The wait a server asked for: ``retry-after-ms``, else ``Retry-After`` in seconds or
    as an HTTP date; ``None`` when it asked for none (or for nothing readable)."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            parsed = email.utils.parsedate_tz(value)
            if parsed is None:
                continue
            seconds = email.utils.mktime_tz(parsed) - time.time()
        if math.isfinite(seconds):
            return max(seconds, 0.0)
    return None
