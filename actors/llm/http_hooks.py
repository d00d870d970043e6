"""The HTTP clients the backends send on (the anthropic SDK's, the openai backend's lanes),
and an endpoint's shared limits.

No client retries on its own (the SDK's ``max_retries=0``): a backend retries
requests itself (:mod:`actors.llm.retry`), so that its waits follow one policy, fit its
caller's limits and are reported as they happen. Before each attempt it waits at the
endpoint's :class:`EndpointGate`: one 429 back-off shared by every agent on the endpoint
(when one agent is told to wait, the others do not send into the same wall), and the
optional requests-per-minute window.
"""

from __future__ import annotations

import importlib
import math
import ssl
from collections import deque
from functools import cache

import attrs
import httpx2
import trio

from conclave.config.schema.endpoint import HttpBackendConfig, Timeouts

__all__ = [
    "EndpointGate",
    "GateStatistics",
    "http_client",
    "http_timeout",
    "preload_transport",
    "tls_context",
]

_WINDOW = 60.0


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


def http_timeout(timeouts: Timeouts) -> httpx2.Timeout:
    """The transport's own limits: opening a connection, and sending the request. Waits for
    the server's reply are the backend's (``first_byte``, ``first_token``, ``stall``), which
    knows what it is waiting for."""
    return httpx2.Timeout(connect=timeouts.connect, read=None, write=timeouts.first_byte, pool=None)


def tls_context(base_url: str) -> ssl.SSLContext:
    """The TLS context for an endpoint's clients.

    An ``https`` endpoint gets the system's trusted certificates, loaded once per process
    and shared (loading them costs 25-120 ms of CPU, the first time most of a start-up's
    wait before the first request). A plain ``http`` endpoint (a local server) never does
    TLS, so it does not pay for them: its context verifies certificates and host names but
    trusts none, so a redirect to ``https`` fails its handshake instead of going out
    unverified."""
    if base_url.startswith("https:"):
        return _trusted()
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


@cache
def _trusted() -> ssl.SSLContext:
    return httpx2.create_ssl_context()


def preload_transport() -> None:
    """Import ``httpx2``'s transport, ``httpcore2`` (50-170 ms), which ``httpx2`` imports when
    it makes its first client: in a run, as the first agent sends its first request, which
    then waits for it and charges it to the run. A backend that will make ``httpx2`` clients
    calls this when it is imported, so that the cost is paid there."""
    importlib.import_module("httpcore2")


def http_client(
    config: HttpBackendConfig, *, verify: ssl.SSLContext | bool = True
) -> httpx2.AsyncClient:
    """An endpoint's HTTP client: keeps a connection per concurrent call alive. ``verify``
    may be a TLS context already made (:func:`tls_context`)."""
    return httpx2.AsyncClient(
        verify=verify,
        timeout=http_timeout(config.timeouts),
        limits=httpx2.Limits(
            max_connections=None, max_keepalive_connections=config.max_concurrency
        ),
        follow_redirects=True,
    )
