"""Chat Completions over ``httpx2`` directly: the request, its stream of chunks as plain
dicts, and its failures as the errors the ``openai`` backend classifies.

Why not the official SDK's ``create``: measured by ``benchmarks/http_costs.py`` on the
biggest request of a 50-agent run (a vote prompt of 16,600 characters), the SDK's
``create(stream=True)`` costs 2.2 ms of client CPU per request, of which its request
transform is 0.5 ms and its typed chunk models and request machinery most of the rest,
against 0.6 ms for the same POST and stream through ``httpx2`` alone; and importing the SDK
takes about half a second before the first request can leave. What the SDK did for this
backend is small and kept here: the URL (Azure's deployment path and ``api-version``), the
key's header (``Authorization: Bearer``, Azure's ``api-key``), and its error shapes (a
failed status with the server's body and message, an error event in a begun stream, a
transport failure with its cause chained behind it), which
:mod:`actors.llm.http_errors` classifies as it classified the SDK's.
"""

from __future__ import annotations

import json
import ssl
from collections import deque
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, Final, NoReturn, Self

import httpx2
import orjson
import trio

from conclave.actors.llm.http1 import Http1Pool, Http1Response

__all__ = [
    "DRAIN_S",
    "OMIT",
    "ChatClient",
    "ChatConnectionError",
    "ChatError",
    "ChatStatusError",
    "ChatStream",
    "ChatStreamError",
    "ChatTimeoutError",
]


class _Omit:
    """The marker for a header that must not be sent (e.g. ``Authorization`` to a local
    server that needs no key)."""

    def __repr__(self) -> str:
        return "OMIT"


OMIT: Final = _Omit()

_STREAM_ERROR = "An error occurred during streaming"
_DIRECT_HEADERS = {
    "Accept-Encoding": "gzip, deflate",
    "Connection": "keep-alive",
    "User-Agent": f"python-httpx2/{httpx2.__version__}",
}
"""What ``httpx2`` sends on every request, sent too by connections of the client's own (they
decode both encodings; the user agent is unchanged for servers that log it)."""
DRAIN_S = 0.1
"""How long a stream waits, after ``[DONE]``, for the body's end (as the SDK does)."""


class ChatError(Exception):
    """The base of every failure of a Chat Completions call."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ChatConnectionError(ChatError):
    """The transport failed (the ``httpx2`` error is chained behind it as ``__cause__``)."""

    def __init__(self, message: str = "Connection error.") -> None:
        super().__init__(message)


class ChatTimeoutError(ChatConnectionError):
    """One of the transport's own limits (connect, write) passed."""

    def __init__(self) -> None:
        super().__init__("Request timed out.")


class ChatStatusError(ChatError):
    """The server answered with a failed status: its body (JSON when it parses, else the
    text) and the response, whose headers say whether and when to send again."""

    def __init__(self, response: httpx2.Response | Http1Response) -> None:
        message = f"Error code: {response.status_code}"
        text = response.text.strip()
        body: object = text
        try:
            body = json.loads(text)
        except ValueError:
            pass
        else:
            error = body.get("error", body) if isinstance(body, dict) else None
            detail = error.get("message") if isinstance(error, dict) else None
            if isinstance(detail, str) and detail:
                message += f" - {detail}"
        super().__init__(message)
        self.response = response
        self.status_code = response.status_code
        self.body = body


class ChatStreamError(ChatError):
    """The server sent an error as an event of a stream that had begun; ``body`` is the
    event's ``error``."""

    def __init__(self, body: object) -> None:
        detail = body.get("message") if isinstance(body, dict) else None
        super().__init__(detail if isinstance(detail, str) and detail else _STREAM_ERROR)
        self.body = body


class ChatClient:
    """One endpoint's Chat Completions: where requests go and with which key's header.

    Given ``tls`` (the endpoint's TLS context), requests go out on connections of its own
    (:mod:`actors.llm.http1`): a request through ``httpx2`` cost 0.42 ms of client CPU, the
    same through them 0.1 ms. Without it (a proxy is configured:
    :func:`actors.llm.http1.proxy_configured`), they go through ``httpx2`` on *lanes*: HTTP
    clients (made by ``http``) of one connection each,
    taken last-in first-out and given back when the reply's stream is closed. One pool
    shared by every concurrent call scans all of its connections on every request and every
    release (``httpcore``'s pool is a list), a cost that grows with the number of agents (at
    200 agents it was most of the client's CPU); a lane's pool holds one connection. Calls
    one after another still use one lane, and so one connection."""

    def __init__(
        self,
        *,
        url: str,
        http: Callable[[], httpx2.AsyncClient],
        params: Mapping[str, str] | None = None,
        auth: Mapping[str, str] | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.url = url
        """The full ``.../chat/completions`` URL."""
        self.params = dict(params or {})
        """The query (Azure's ``api-version``)."""
        self.auth = dict(auth or {})
        """The key's header, if any."""
        self._http = http
        self._idle: list[httpx2.AsyncClient] = []
        self._lanes: set[httpx2.AsyncClient] = set()
        self._direct = Http1Pool(tls=tls) if tls is not None else None
        self._sent_url = str(httpx2.URL(url, params=self.params or None))

    @classmethod
    def openai(
        cls,
        *,
        base_url: str,
        key: str | None,
        http: Callable[[], httpx2.AsyncClient],
        identity: Mapping[str, str] | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> ChatClient:
        """An OpenAI-compatible server at ``base_url`` (``None``: a server that needs no
        key, sent no ``Authorization``); ``identity``: headers every request carries (the
        organization and project)."""
        auth = {**(identity or {}), **({"Authorization": f"Bearer {key}"} if key else {})}
        url = f"{base_url.rstrip('/')}/chat/completions"
        return cls(url=url, auth=auth, http=http, tls=tls)

    @classmethod
    def azure(
        cls,
        *,
        endpoint: str,
        deployment: str,
        api_version: str,
        key: str | None,
        http: Callable[[], httpx2.AsyncClient],
        identity: Mapping[str, str] | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> ChatClient:
        """Azure OpenAI: the deployment's path, the API version in the query, the key in
        ``api-key``."""
        url = f"{endpoint.rstrip('/')}/openai/deployments/{deployment}/chat/completions"
        auth = {**(identity or {}), **({"api-key": key} if key else {})}
        params = {"api-version": api_version}
        return cls(url=url, params=params, auth=auth, http=http, tls=tls)

    @property
    def lanes(self) -> int:
        """HTTP clients opened so far: the most calls that were in flight at once."""
        return len(self._lanes)

    @property
    def connections(self) -> int:
        """Connections of its own opened so far (``0`` when requests go through
        ``httpx2``)."""
        return 0 if self._direct is None else self._direct.opened

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        lanes, self._lanes, self._idle = self._lanes, set(), []
        if self._direct is not None:
            await self._direct.aclose()
        for lane in lanes:
            await lane.aclose()

    def _take(self) -> httpx2.AsyncClient:
        if self._idle:
            return self._idle.pop()
        lane = self._http()
        self._lanes.add(lane)
        return lane

    def _give_back(self, lane: httpx2.AsyncClient) -> None:
        if lane in self._lanes:  # not after the client was closed
            self._idle.append(lane)

    async def open(
        self,
        body: Mapping[str, Any],
        *,
        headers: Mapping[str, object],
        timeout: httpx2.Timeout,
    ) -> ChatStream:
        """Send ``body``; the stream of the reply once its status says it began. Raises
        :class:`ChatStatusError` for a failed status (its body read) and
        :class:`ChatConnectionError` for a failed transport. Cancelled, it closes whatever
        it had opened."""
        sent = {
            **(_DIRECT_HEADERS if self._direct is not None else {}),
            "Content-Type": "application/json",
            "Accept": "application/json",
            **self.auth,
        }
        for name, value in headers.items():
            if value is OMIT:
                sent.pop(name, None)
            else:
                sent[name] = str(value)
        if self._direct is not None:
            return await self._send_direct(self._direct, body, sent, timeout)
        lane = self._take()
        try:
            return await self._send(lane, body, sent, timeout)
        except BaseException:
            self._give_back(lane)
            raise

    async def _send_direct(
        self,
        direct: Http1Pool,
        body: Mapping[str, Any],
        headers: dict[str, str],
        timeout: httpx2.Timeout,
    ) -> ChatStream:
        try:
            response = await direct.request(
                "POST", self._sent_url, headers, orjson.dumps(body), timeout
            )
        except httpx2.TimeoutException as exc:
            raise ChatTimeoutError() from exc
        except httpx2.HTTPError as exc:
            raise ChatConnectionError() from exc
        if response.status_code < 400:
            return ChatStream(response, _nothing)
        await _refused(response)

    async def _send(
        self,
        lane: httpx2.AsyncClient,
        body: Mapping[str, Any],
        headers: dict[str, str],
        timeout: httpx2.Timeout,
    ) -> ChatStream:
        request = lane.build_request(
            "POST",
            self.url,
            params=self.params or None,
            headers=headers,
            content=orjson.dumps(body),
            timeout=timeout,
        )
        try:
            response = await lane.send(request, stream=True)
        except httpx2.TimeoutException as exc:
            raise ChatTimeoutError() from exc
        except httpx2.HTTPError as exc:
            raise ChatConnectionError() from exc
        if response.status_code < 400:
            return ChatStream(response, lambda: self._give_back(lane))
        await _refused(response)


async def _refused(response: httpx2.Response | Http1Response) -> NoReturn:
    """Raise a failed status as :class:`ChatStatusError`, once its body (which says why) is
    read and the response closed."""
    try:
        await response.aread()
    except httpx2.HTTPError as exc:
        raise ChatConnectionError() from exc
    finally:
        await response.aclose()
    raise ChatStatusError(response)


class ChatStream:
    """A reply's server-sent events, each ``data`` decoded as JSON, up to ``[DONE]``.

    An event whose data carries an ``error`` is raised as :class:`ChatStreamError`; data
    that is not JSON raises ``json.JSONDecodeError``; a failed transport raises
    :class:`ChatConnectionError`. Leaving ``async with`` closes the response: a
    stream left half-read drops its connection rather than return it to the pool mid-reply.

    The body is split into lines as bytes and each event's data decoded by ``orjson``
    straight from them: ``httpx2``'s ``aiter_lines`` (bytes, then text, then lines, each a
    generator with its decoder) was a fifth of a request's client CPU."""

    def __init__(
        self, response: httpx2.Response | Http1Response, closed: Callable[[], None]
    ) -> None:
        self._response = response
        self._closed = closed
        self._body = response.aiter_bytes()
        self._lines: deque[bytes] = deque()
        self._rest = b""
        self._ended = False
        self._done = False

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        self._done = True
        try:
            await self._body.aclose()
        finally:
            try:
                await self._response.aclose()
            finally:
                self._closed()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Any:
        data: list[bytes] = []
        lines = self._lines
        while not self._done:
            # Lines already read are taken without awaiting: a chunk is two lines or more.
            if lines:
                line = lines.popleft()
            elif await self._fill():
                continue
            else:
                self._done = True
                line = b""  # the body's end ends the event in progress
            if line:
                # ``event:``, ``id:``, ``retry:`` and comments say nothing a chunk needs.
                if line.startswith(b"data:"):
                    data.append(line[6:] if line.startswith(b"data: ") else line[5:])
                continue
            if not data:
                continue
            text = data[0] if len(data) == 1 else b"\n".join(data)
            if text.startswith(b"[DONE]"):
                self._done = True
                await self._drain()
                break
            try:
                chunk = orjson.loads(text)
            except orjson.JSONDecodeError:
                # The standard parser, as before, decides: its error says what and where
                # (quoted to the user), and text that is not UTF-8 is read with the bad
                # bytes replaced.
                chunk = json.loads(text.decode(errors="replace"))
            if isinstance(chunk, dict) and chunk.get("error"):
                raise ChatStreamError(chunk["error"])
            return chunk
        raise StopAsyncIteration

    async def _drain(self) -> None:
        """Read what follows ``[DONE]`` to the body's end, so that the connection goes back
        to the pool; a server slow to end the body (more than :data:`DRAIN_S`) or failing
        now only costs the connection, never the reply already complete."""
        with trio.move_on_after(DRAIN_S):
            try:
                while await self._fill():
                    self._lines.clear()
            except ChatConnectionError:
                pass

    async def _fill(self) -> bool:
        """Read the body's next piece into whole lines, each without its end (``\\n``,
        ``\\r\\n`` or ``\\r``, as server-sent events allow); ``False`` at the body's end."""
        if self._ended:
            return False
        try:
            chunk: bytes = await self._body.__anext__()
        except StopAsyncIteration:
            self._ended = True
            if not self._rest:
                return False
            self._lines.append(self._rest.rstrip(b"\r"))
            self._rest = b""
            return True
        except httpx2.TimeoutException as exc:
            raise ChatTimeoutError() from exc
        except httpx2.HTTPError as exc:
            raise ChatConnectionError() from exc
        self._split(chunk)
        return True

    def _split(self, chunk: bytes) -> None:
        data = self._rest + chunk
        # A CR that ends the chunk may be the first half of CR LF: it waits for the
        # next byte rather than end a line (and the next one, empty, end an event) early.
        cut = len(data) - 1 if data.endswith(b"\r") else len(data)
        text = data[:cut]
        if b"\r" in text:
            text = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        *lines, rest = text.split(b"\n")
        self._rest = rest + data[cut:]
        self._lines.extend(lines)


def _nothing() -> None:
    """A stream on a connection of the client's own gives nothing back when closed (its
    response does)."""
