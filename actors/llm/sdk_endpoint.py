"""What the HTTP backends (``openai`` over :mod:`actors.llm.chat_wire`, ``anthropic`` through
its SDK) share: the provider that opens one client per endpoint and key, the endpoint that
hands each agent its backend, and the call around the client (the key check, the timeouts,
the retries, the stream read to its end, and every failure turned into one classified error
naming the agent and the host).

A call's waits for the server are bounded one by one (``timeouts``): the reply's start
(``first_byte``), its first token (``first_token``), and every chunk after that (``stall``).
A request that failed before its reply began in a way another attempt may mend (a 429, a
5xx, a lost connection) is sent again, up to ``max_retries`` times, after a back-off with
jitter or the server's ``Retry-After`` (:mod:`actors.llm.retry`); each retry is told to the
call's sink as it happens. A ``Retry-After`` longer than the call may still take is not
waited for: the call fails at once, saying how long the server asked.

A backend module supplies only what its client does its own way: how to build the client,
the request's arguments, how a reply is assembled from the stream, and where a status and
an error type sit in the client's exceptions. This module imports no SDK (the anthropic
backend module does, and the pool imports backend modules only when a config names them).
"""

from __future__ import annotations

import json
import math
import os
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Hashable, Mapping
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

import attrs
import httpx2
import trio

from conclave.actors.llm.errors import FatalLLMError, LLMError, TransientLLMError
from conclave.actors.llm.http_errors import (
    Diagnosis,
    connection_diagnosis,
    error_message,
    failure,
    malformed_event,
    status_diagnosis,
    unexpected_event,
)
from conclave.actors.llm.http_hooks import EndpointGate, http_client, http_timeout, tls_context
from conclave.actors.llm.protocol import Completion, CompletionRequest, CompletionSink
from conclave.actors.llm.redaction import redact
from conclave.actors.llm.retry import REQUEST_BACKOFF, Backoff, retry_after, too_long
from conclave.config.keys import KeyStatus, key_status, resolve_key
from conclave.config.schema import AgentConfig
from conclave.config.schema.endpoint import HttpBackendConfig, endpoint_host
from conclave.config.secret import Secret

__all__ = [
    "DEADLINE_SLACK",
    "RETRY_COUNT_HEADER",
    "SdkBackend",
    "SdkClient",
    "SdkEndpoint",
    "SdkProvider",
    "SdkStream",
    "StreamedReply",
]


DEADLINE_SLACK = 0.01
"""How late, as a fraction of the wait, a stream's silence (``first_token``, ``stall``) may be
called: its deadline is moved at most once per this much of the wait."""

RETRY_COUNT_HEADER = "x-stainless-retry-count"
"""Both SDKs number each attempt of a request in this header (0 for the first)."""


class _AsyncResource(Protocol):
    """Entered with ``async with``; leaving closes it."""

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None: ...


class SdkClient(_AsyncResource, Protocol):
    """An SDK's async client, as the endpoint uses it: entered once, shared by its agents."""


class SdkStream(_AsyncResource, Protocol):
    """A raw event stream from ``create(stream=True)``: leaving it closes the connection."""

    def __aiter__(self) -> AsyncIterator[Any]: ...


class StreamedReply(Protocol):
    """A reply assembled by hand from the items of a stream, handing deltas to the sink."""

    @property
    def finished(self) -> bool:
        """Whether the stream said the reply was complete (a stream may just stop)."""
        ...

    def add(self, item: Any, sink: CompletionSink | None) -> None: ...

    def completion(self) -> Completion: ...


C = TypeVar("C", bound=HttpBackendConfig)
K = TypeVar("K", bound=SdkClient)


class SdkProvider(ABC, Generic[C, K]):
    """A backend type in the pool: agents on one server with one key share one client."""

    NAME: ClassVar[str]
    """The backend type, as agents' configs name it."""
    DEFAULT_URL: ClassVar[str]
    """The provider's own API, for a config without ``base_url``."""
    CONFIG: type[C]
    """The backend section this provider serves."""
    BACKEND: type[SdkBackend[C, K]]
    """What each agent on an endpoint gets."""

    def __init__(self, environ: Mapping[str, str] = os.environ) -> None:
        self._environ = environ

    def config(self, agent: AgentConfig) -> C:
        backend = agent.backend
        if not isinstance(backend, self.CONFIG):
            raise TypeError(f"agent {agent.id!r} is not an {self.NAME} agent")
        return backend

    def base_url(self, config: C) -> str:
        return config.base_url or self.DEFAULT_URL

    def endpoint_key(self, agent: AgentConfig) -> Hashable:
        config = self.config(agent)
        return (self.base_url(config), resolve_key(config, self._environ))

    async def open_endpoint(self, agent: AgentConfig, stack: AsyncExitStack) -> SdkEndpoint[C, K]:
        """Open the endpoint's client; it is closed when ``stack`` is."""
        config = self.config(agent)
        base_url = self.base_url(config)
        key = resolve_key(config, self._environ)
        gate = EndpointGate(requests_per_minute=config.requests_per_minute)
        tls = tls_context(base_url)

        def http() -> httpx2.AsyncClient:
            return http_client(config, verify=tls)

        client = self._client(config, base_url, key, http)
        await stack.enter_async_context(client)
        return SdkEndpoint(
            provider=self,
            client=client,
            gate=gate,
            host=endpoint_host(base_url),
            key_status=key_status(key, base_url),
        )

    def concurrency(self, agent: AgentConfig) -> float:
        return self.config(agent).max_concurrency

    @abstractmethod
    def _client(
        self,
        config: C,
        base_url: str,
        key: Secret | None,
        http: Callable[[], httpx2.AsyncClient],
    ) -> K:
        """The client for the endpoint, on HTTP clients made by ``http`` (all sharing one TLS
        context), with any retries of its own off (``max_retries=0``): the backend retries
        (see the module docstring)."""


@attrs.frozen(kw_only=True)
class SdkEndpoint(Generic[C, K]):
    """One server and key: the client and gate its agents share, and the host their errors
    name."""

    provider: SdkProvider[C, K]
    client: K
    gate: EndpointGate
    host: str
    key_status: KeyStatus

    def backend_for(self, agent: AgentConfig) -> SdkBackend[C, K]:
        config = self.provider.config(agent)
        return self.provider.BACKEND(
            client=self.client,
            config=config,
            agent_id=agent.id,
            host=self.host,
            key_status=self.key_status,
            gate=self.gate,
        )


class SdkBackend(ABC, Generic[C, K]):
    """One agent's view of an endpoint. Cancellation-safe: a cancelled call closes its stream
    at once (the connection is dropped, not returned half-read) and the shared client serves
    the next call."""

    SDK_ERROR: ClassVar[type[Exception]]
    """The base of every exception the SDK raises."""
    CONNECTION_ERROR: ClassVar[type[Exception]]
    """The SDK's exception for a transport failure (the ``httpx2`` error is behind it)."""
    OMIT: ClassVar[object]
    """The SDK's marker for a header it must not send."""
    STREAM_END: ClassVar[str]
    """What the stream sends when the reply is complete, as a truncated stream's error says."""
    PROTOCOL: ClassVar[str]
    """The protocol's name, as an error about an event that does not belong to it says."""
    NO_KEY_ADVICE: ClassVar[str] = ""
    """Added to the error of a call without a key."""

    def __init__(
        self,
        *,
        client: K,
        config: C,
        agent_id: str,
        host: str,
        key_status: KeyStatus = KeyStatus.GIVEN,
        gate: EndpointGate | None = None,
        backoff: Backoff = REQUEST_BACKOFF,
    ) -> None:
        self._client = client
        self._config = config
        self._agent_id = agent_id
        self._host = host
        self._key_status = key_status
        self.gate = gate
        self._backoff = backoff
        self._timeout = http_timeout(config.timeouts)

    def _fail(self, diagnosis: Diagnosis) -> LLMError:
        return failure(
            diagnosis.kind,
            agent=self._agent_id,
            host=self._host,
            cause=diagnosis.cause,
            key=self._config.api_key,
            retry_after=diagnosis.retry_after,
        )

    def _key_hint(self) -> str:
        if self._config.api_key is not None:
            return "api_key"
        return f"api_key or the {self._config.api_key_env} environment variable"

    async def complete(
        self, request: CompletionRequest, *, sink: CompletionSink | None = None
    ) -> Completion:
        if self._key_status is KeyStatus.MISSING:
            raise self._fail(
                Diagnosis(FatalLLMError, f"no API key: set {self._key_hint()}{self.NO_KEY_ADVICE}")
            )
        arguments = self._arguments(request)
        headers = self._headers()
        if headers:
            arguments["extra_headers"] = headers
        total = self._config.timeouts.total
        with trio.move_on_after(math.inf if total is None else total) as timer:
            return await self._attempts(arguments, sink)
        assert timer.cancelled_caught
        raise self._fail(
            Diagnosis(TransientLLMError, f"the call took longer than {total:g}s (timeouts.total)")
        )

    async def _attempts(self, arguments: dict[str, Any], sink: CompletionSink | None) -> Completion:
        """Send the request until it succeeds, fails in a way no retry mends, or its retries
        run out; wait before each retry, at the endpoint's gate too."""
        retries = 0
        while True:
            if self.gate is not None:
                await self.gate.admit()
            # Numbered as the SDKs number their own retries, for the server's logs.
            headers = {**arguments.get("extra_headers", {}), RETRY_COUNT_HEADER: str(retries)}
            try:
                return await self._attempt({**arguments, "extra_headers": headers}, sink)
            except _Failed as failed:
                diagnosis = failed.diagnosis
                if not diagnosis.retry or retries >= self._config.max_retries:
                    raise self._fail(diagnosis) from None
                retries += 1
                delay = self._retry_delay(diagnosis, retries)
            if sink is not None:
                key = self._config.api_key
                cause = redact(diagnosis.cause, () if key is None else (key,))
                sink.retry(retries, diagnosis.status, delay, cause)
            await trio.sleep(delay)

    def _retry_delay(self, diagnosis: Diagnosis, retries: int) -> float:
        """The wait before retry number ``retries``; raises when the server asked for a wait
        longer than the call may still take."""
        asked = diagnosis.retry_after
        delay = self._backoff.wait(retries, asked=asked)
        if asked is not None:
            left = trio.current_effective_deadline() - trio.current_time()
            refused = too_long(asked, left)
            if refused is not None:
                raise self._fail(
                    Diagnosis(
                        FatalLLMError, f"{diagnosis.cause}; {refused}", status=diagnosis.status
                    )
                ) from None
            if diagnosis.status == 429 and self.gate is not None:
                self.gate.back_off(delay)
        return delay

    async def _attempt(self, arguments: dict[str, Any], sink: CompletionSink | None) -> Completion:
        """Send the request once and read its reply, each wait for the server bounded by
        its timeout; every failure is raised as :class:`_Failed`."""
        timeouts = self._config.timeouts
        with trio.move_on_after(timeouts.first_byte) as opening:
            try:
                stream = await self._open_stream(arguments)
            except self.SDK_ERROR as exc:
                raise _Failed(self._diagnose(exc, started=False)) from None
        if opening.cancelled_caught:
            raise _Failed(
                Diagnosis(
                    TransientLLMError,
                    f"no reply began within {timeouts.first_byte:g}s (timeouts.first_byte): the "
                    "server took the request and said nothing",
                )
            )
        reply = self._reply()
        heard = _Heard(sink)
        # One scope around the whole stream, its deadline moved on as items come: a scope
        # per item would be left while the SDK's generator keeps its own open across yields.
        # Moving a deadline re-files it in trio's deadline queue, a quarter of an item's
        # cost when a model streams token by token, so it moves only once it is more than
        # DEADLINE_SLACK of the wait behind: a silence is called between 100 % and 101 %
        # of its limit after the last item.
        with trio.CancelScope(deadline=trio.current_time() + timeouts.first_token) as waiting:
            try:
                async with stream:
                    async for item in stream:
                        try:
                            reply.add(item, heard)
                        except Exception as exc:
                            unexpected = unexpected_event(item, exc, protocol=self.PROTOCOL)
                            raise _Failed(unexpected) from None
                        limit = timeouts.stall if heard.tokens else timeouts.first_token
                        due = trio.current_time() + limit
                        if not due <= waiting.deadline <= due + limit * DEADLINE_SLACK:
                            waiting.deadline = due + limit * DEADLINE_SLACK
            except self.SDK_ERROR as exc:
                raise _Failed(self._diagnose(exc, started=True)) from None
            except json.JSONDecodeError as exc:
                raise _Failed(malformed_event(exc)) from None
            except (httpx2.HTTPError, ValueError, OSError) as exc:
                raise _Failed(
                    connection_diagnosis(exc, started=True, timeouts=self._config.timeouts)
                ) from None
        if waiting.cancelled_caught:
            raise _Failed(self._silence(heard.tokens))
        if not reply.finished:
            raise _Failed(
                Diagnosis(
                    TransientLLMError,
                    f"the stream ended before the reply was finished (no {self.STREAM_END})",
                )
            )
        return reply.completion()

    def _silence(self, tokens: bool) -> Diagnosis:
        timeouts = self._config.timeouts
        if tokens:
            cause = f"the stream stalled: no data for {timeouts.stall:g}s (timeouts.stall)"
        else:
            cause = (
                f"the reply began but no token came within {timeouts.first_token:g}s "
                "(timeouts.first_token)"
            )
        return Diagnosis(TransientLLMError, cause)

    def _diagnose(self, exc: Exception, *, started: bool) -> Diagnosis:
        if isinstance(exc, self.CONNECTION_ERROR):
            return connection_diagnosis(exc, started=started, timeouts=self._config.timeouts)
        diagnosis = self._status_diagnosis(exc)
        if diagnosis is None:
            return Diagnosis(TransientLLMError, f"{type(exc).__name__}: {exc}")
        response = getattr(exc, "response", None)
        if started or response is None:
            return diagnosis
        # A failed status before the reply began: the server may say whether, and when, to
        # send the request again.
        status: int = response.status_code
        asked = retry_after(response.headers)
        should = response.headers.get("x-should-retry")
        mendable = status in (408, 409, 429) or status >= 500
        retry = should == "true" if should in ("true", "false") else mendable
        return attrs.evolve(
            diagnosis,
            retry=retry and diagnosis.kind is TransientLLMError,
            status=status,
            retry_after=asked,
        )

    def _status(
        self, status: int, error_type: str | None, body: object, fallback: str
    ) -> Diagnosis:
        """A failed status, worded with the provider's own message from ``body``."""
        return status_diagnosis(
            status,
            error_type,
            error_message(body, fallback),
            key_hint=self._key_hint(),
            model=self._config.model,
        )

    def _headers(self) -> dict[str, object]:
        """``extra_headers``, and no ``Authorization`` for a local server that needs no key."""
        headers: dict[str, object] = dict(self._config.extra_headers)
        if self._key_status is KeyStatus.NOT_NEEDED:
            headers["Authorization"] = self.OMIT
        return headers

    @abstractmethod
    def _arguments(self, request: CompletionRequest) -> dict[str, Any]:
        """The keyword arguments of the SDK's streaming ``create`` for ``request``, but for
        ``extra_headers`` (added by :meth:`complete`)."""

    @abstractmethod
    async def _open_stream(self, arguments: dict[str, Any]) -> SdkStream:
        """Send the request; the stream of its reply."""

    @abstractmethod
    def _reply(self) -> StreamedReply:
        """An empty reply, to assemble one stream into."""

    @abstractmethod
    def _status_diagnosis(self, exc: Exception) -> Diagnosis | None:
        """What an SDK exception that carries an HTTP status means (see :meth:`_status`);
        ``None`` for one that does not."""


class _Failed(Exception):
    """One attempt failed; the diagnosis says how, and whether another may mend it."""

    def __init__(self, diagnosis: Diagnosis) -> None:
        super().__init__(diagnosis.cause)
        self.diagnosis = diagnosis


class _Heard:
    """The call's sink, noting whether the reply has produced a token yet (from then on, a
    silence is a stall rather than a model thinking)."""

    def __init__(self, sink: CompletionSink | None) -> None:
        self._sink = sink
        self.tokens = False

    def text(self, delta: str) -> None:
        self.tokens = True
        if self._sink is not None:
            self._sink.text(delta)

    def reasoning(self, delta: str) -> None:
        self.tokens = True
        if self._sink is not None:
            self._sink.reasoning(delta)

    def tool_arguments(self, index: int, name: str, delta: str) -> None:
        self.tokens = True
        if self._sink is not None:
            self._sink.tool_arguments(index, name, delta)

    def retry(self, attempt: int, status: int | None, delay: float, error: str) -> None:
        if self._sink is not None:
            self._sink.retry(attempt, status, delay, error)
