"""The HTTP client the backends hand their SDK, and what they add to it: an endpoint's shared
limits, and retries made visible.

The SDKs retry on their own (429 and 5xx before the first byte, honouring ``Retry-After``;
a lost connection), inside one ``create`` call. Their HTTP client (``httpx2``) awaits
request and response hooks on every attempt, and that is where Conclave takes part:

- the request hook waits at the endpoint's :class:`EndpointGate`: one 429 back-off shared by
  every agent on the endpoint (when one agent is told to wait, the others do not send into
  the same wall), and the optional requests-per-minute window;
- the response hook sees each failed attempt the SDK will retry, and tells the call's sink
  (``sink.retry``), which the agent reports as an ``LlmRetry`` event.

The hooks learn which call they serve from a context variable that the backend sets around
its SDK call (:func:`call_scope`): hooks run in the calling task.
"""

from __future__ import annotations

import email.utils
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import attrs
import httpx2
import trio

from conclave.actors.llm.protocol import CompletionSink
from conclave.config.schema.endpoint import HttpBackendConfig, Timeouts

__all__ = [
    "CallScope",
    "EndpointGate",
    "GateStatistics",
    "call_scope",
    "event_hooks",
    "http_client",
    "http_timeout",
    "retry_delay",
]

RETRY_COUNT_HEADER = "x-stainless-retry-count"
"""Both SDKs number each attempt of a request in this header (0 for the first)."""
_INITIAL_DELAY = 0.5
_MAX_DELAY = 8.0
_MAX_RETRY_AFTER = 120.0
"""The SDKs honour a server's ``Retry-After`` up to two minutes."""
_WINDOW = 60.0


@attrs.define
class CallScope:
    """The call in progress in this task, as the hooks see it."""

    sink: CompletionSink | None
    max_retries: int
    reported: int = 0
    """Retries reported so far (each attempt is reported once)."""

    def report(self, attempt: int, status: int | None, delay: float) -> None:
        if attempt <= self.reported:
            return
        self.reported = attempt
        if self.sink is not None:
            self.sink.retry(attempt, status, delay)


_CALL: ContextVar[CallScope | None] = ContextVar("conclave_llm_call", default=None)


@contextmanager
def call_scope(sink: CompletionSink | None, *, max_retries: int) -> Iterator[CallScope]:
    """Make ``sink`` the one this task's HTTP attempts report retries to, for the block."""
    scope = CallScope(sink=sink, max_retries=max_retries)
    token = _CALL.set(scope)
    try:
        yield scope
    finally:
        _CALL.reset(token)


@attrs.frozen(kw_only=True)
class GateStatistics:
    backoff_remaining: float
    """Seconds until requests may be sent again after a 429 (0 when none is in force)."""
    requests_in_window: int
    """Requests sent in the last minute (counted only with a requests-per-minute limit)."""
    waiting: int


class EndpointGate:
    """An endpoint's shared limits: the 429 back-off and the requests-per-minute window.

    :meth:`admit` waits until a request may be sent. Cancelling it sends nothing and counts
    nothing: the window records a request only once it is let through.
    """

    def __init__(self, *, requests_per_minute: int | None = None) -> None:
        self._rpm = requests_per_minute
        self._sent: deque[float] = deque()
        self._backoff_until = -math.inf
        self._waiting = 0

    def back_off(self, delay: float) -> None:
        """No request leaves before ``delay`` seconds from now (a later back-off wins)."""
        self._backoff_until = max(self._backoff_until, trio.current_time() + delay)

    def _wait(self, now: float) -> float:
        wait = self._backoff_until - now
        if self._rpm is not None:
            while self._sent and self._sent[0] <= now - _WINDOW:
                self._sent.popleft()
            if len(self._sent) >= self._rpm:
                wait = max(wait, self._sent[0] + _WINDOW - now)
        return wait

    async def admit(self) -> None:
        while True:
            now = trio.current_time()
            wait = self._wait(now)
            if wait <= 0:
                if self._rpm is not None:
                    self._sent.append(now)
                return
            self._waiting += 1
            try:
                await trio.sleep(wait)
            finally:
                self._waiting -= 1

    def statistics(self) -> GateStatistics:
        now = trio.current_time()
        self._wait(now)
        return GateStatistics(
            backoff_remaining=max(0.0, self._backoff_until - now),
            requests_in_window=len(self._sent),
            waiting=self._waiting,
        )


def retry_delay(headers: Mapping[str, str], retries_taken: int) -> float:
    """How long the SDK waits before its next attempt: the server's ``retry-after-ms`` or
    ``Retry-After`` (seconds or an HTTP date) when it is within two minutes, else its
    exponential back-off (0.5 s doubling up to 8 s; the SDK takes up to a quarter off)."""
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
        if math.isfinite(seconds) and 0 < seconds <= _MAX_RETRY_AFTER:
            return seconds
    return min(_INITIAL_DELAY * 2.0 ** min(retries_taken, 32), _MAX_DELAY)


def _will_retry(status: int, headers: Mapping[str, str]) -> bool:
    """The SDKs' rule: the server's ``x-should-retry`` if it says, else 408, 409, 429, 5xx."""
    should = headers.get("x-should-retry")
    if should in ("true", "false"):
        return should == "true"
    return status in (408, 409, 429) or status >= 500


def _retries_taken(headers: Mapping[str, str]) -> int:
    try:
        return int(headers.get(RETRY_COUNT_HEADER, "0"))
    except ValueError:
        return 0


Hook = Callable[[Any], Awaitable[None]]


def event_hooks(gate: EndpointGate) -> dict[str, list[Hook]]:
    """The ``event_hooks`` of an endpoint's HTTP client (see the module docstring)."""

    async def on_request(request: Any) -> None:
        await gate.admit()
        scope = _CALL.get()
        taken = _retries_taken(request.headers)
        if scope is not None and taken > scope.reported:
            # A retry no response announced: the last attempt lost its connection.
            scope.report(taken, None, 0.0)

    async def on_response(response: Any) -> None:
        status: int = response.status_code
        if status < 400 or not _will_retry(status, response.headers):
            return
        taken = _retries_taken(response.request.headers)
        delay = retry_delay(response.headers, taken)
        if status == 429:
            gate.back_off(delay)
        scope = _CALL.get()
        if scope is not None and taken < scope.max_retries:
            scope.report(taken + 1, status, delay)

    return {"request": [on_request], "response": [on_response]}


def http_timeout(timeouts: Timeouts) -> httpx2.Timeout:
    """``stall`` bounds every wait for the server: the reply's start and each chunk after."""
    return httpx2.Timeout(
        connect=timeouts.connect, read=timeouts.stall, write=timeouts.stall, pool=None
    )


def http_client(config: HttpBackendConfig, gate: EndpointGate) -> httpx2.AsyncClient:
    """An endpoint's HTTP client: keeps a connection per concurrent call alive, waits at
    ``gate`` before every attempt and reports retries (see the module docstring)."""
    return httpx2.AsyncClient(
        timeout=http_timeout(config.timeouts),
        limits=httpx2.Limits(
            max_connections=None, max_keepalive_connections=config.max_concurrency
        ),
        event_hooks=event_hooks(gate),
        follow_redirects=True,
    )
