"""HTTP/1.1 straight on trio's streams, for the ``openai`` backend's requests: one POST, its
reply's body as it arrives, connections kept alive and reused last-in first-out.

Why not ``httpx2`` (which stays, for proxies: :func:`proxy_configured`): against
:mod:`benchmarks.http_server` replying at once, the biggest request of a 50-agent run cost
0.42 ms of client CPU through ``httpx2`` (its request and response models, ``httpcore2``'s
pool and ``h11``'s state machine beneath), of which the socket work itself (the request
written, the reply read) was 0.055 ms. What those layers did for a Chat Completions call is
kept here: the framing (``Content-Length``, chunked, or to the connection's end), redirects as
``httpx2`` follows them, a connection found closed by the server while idle never reused,
idle connections dropped after :data:`KEEPALIVE_S`, TLS with the endpoint's context, and every
failure raised as the ``httpx2`` exception with ``httpx2``'s wording, so that
:mod:`actors.llm.http_errors` classifies it as before.
"""

from __future__ import annotations

import ipaddress
import math
import re
import select
import socket
import ssl
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from functools import cached_property, lru_cache
from typing import NamedTuple
from urllib.parse import urljoin

import attrs
import httpx2
import trio

__all__ = [
    "KEEPALIVE_S",
    "MAX_REDIRECTS",
    "Http1Pool",
    "Http1Response",
    "proxy_configured",
]

KEEPALIVE_S = 5.0
"""How long an idle connection is kept (``httpx2``'s default ``keepalive_expiry``)."""
MAX_REDIRECTS = 20
"""Redirects followed before a request fails (``httpx2``'s default)."""
_MAX_HEAD = 64 * 1024
_READ = 65536
_REDIRECTS = frozenset((301, 302, 303, 307, 308))
_NO_BODY = frozenset((204, 304))
_CREDENTIALS = frozenset(("authorization", "api-key", "x-api-key", "cookie", "host"))
"""Headers not sent to another origin a redirect names: ``httpx2`` drops ``Authorization``
(and sets ``Host``), but Azure's key is in ``api-key`` and others' in ``x-api-key``."""
_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")
_INCOMPLETE = "peer closed connection without sending complete message body"
_TOKEN = re.compile(r"[-!#$%&'*+.^_`|~0-9A-Za-z]+")
"""A header's name (RFC 9110's token)."""
_CONTROL = re.compile("[\x00\x0b\x0c]")
"""What h11 refuses in a header's value besides line breaks."""
_DIGITS = re.compile(rb"[0-9]+")
"""A ``Content-Length`` (``int`` alone also takes a sign, ``_`` and spaces)."""
_HEX = re.compile(rb"[0-9A-Fa-f]+")
"""A chunk's size (``int(..., 16)`` alone also takes a sign, ``0x`` and ``_``)."""


def proxy_configured(environ: Mapping[str, str]) -> bool:
    """Whether the environment names a proxy (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``,
    either case): requests then go through ``httpx2``, which honours them (and
    ``NO_PROXY``) as it always did."""
    return any(environ.get(name) or environ.get(name.upper()) for name in _PROXY_VARIABLES)


class _Origin(NamedTuple):
    """Where a connection goes (a tuple: it keys the idle connections on every request)."""

    scheme: str
    host: str
    port: int


@attrs.frozen
class _Target:
    """A URL as a request needs it: where to connect, and the request line's path."""

    url: str
    origin: _Origin
    path: bytes
    host_header: bytes

    @classmethod
    @lru_cache(maxsize=64)  # every request of an endpoint goes to one URL
    def parse(cls, url: str) -> _Target:
        """``url`` normalized as ``httpx2`` sends it (the path and query percent-encoded, an
        international host name in IDNA): a redirect's ``Location`` may be neither."""
        parsed = httpx2.URL(url)
        if parsed.scheme not in ("http", "https") or not parsed.raw_host:
            raise httpx2.UnsupportedProtocol(f"Request URL has an unsupported protocol {url!r}.")
        default = 443 if parsed.scheme == "https" else 80
        return cls(
            url=str(parsed),
            origin=_Origin(parsed.scheme, parsed.raw_host.decode("ascii"), parsed.port or default),
            path=parsed.raw_path,
            host_header=parsed.netloc,
        )


class _Connection:
    """One connection: its stream, the raw socket beneath (to see, while idle, whether the
    server closed it), and what was read past the last reply."""

    def __init__(self, stream: trio.abc.Stream, sock: trio.socket.SocketType) -> None:
        self.stream = stream
        self.sock = sock
        self.buffer = bytearray()
        self.idle_since = 0.0

    def closed_by_peer(self) -> bool:
        """Whether the socket is readable while no reply is due: the server closed it (or
        sent what no request asked for)."""
        poller = select.poll()
        poller.register(self.sock.fileno(), select.POLLIN | select.POLLERR | select.POLLHUP)
        return bool(poller.poll(0))

    async def receive(self) -> bytes:
        try:
            return bytes(await self.stream.receive_some(_READ))
        except (trio.BrokenResourceError, OSError) as exc:
            raise httpx2.ReadError(str(exc.__cause__ or exc) or type(exc).__name__) from exc

    async def drop(self) -> None:
        await trio.aclose_forcefully(self.stream)


class Http1Response:
    """A reply: its status and headers once its head was read, its body read on demand
    (:meth:`aiter_bytes`, once). :meth:`aclose` gives the connection back to its pool when
    the body was read to its end, and drops it otherwise."""

    def __init__(
        self,
        pool: Http1Pool,
        connection: _Connection,
        origin: _Origin,
        status: int,
        raw_headers: list[tuple[bytes, bytes]],
        framing: _Framing,
    ) -> None:
        self.status_code = status
        self._raw_headers = raw_headers
        self._pool = pool
        self._connection: _Connection | None = connection
        self._origin = origin
        self._framing = framing
        self._complete = framing.length == 0
        self._content: bytes | None = None

    @cached_property
    def headers(self) -> httpx2.Headers:
        return httpx2.Headers(self._raw_headers)

    @property
    def text(self) -> str:
        return (self._content or b"").decode(errors="replace")

    async def aread(self) -> bytes:
        if self._content is None:
            self._content = b"".join([piece async for piece in self.aiter_bytes()])
        return self._content

    async def aiter_bytes(self) -> AsyncGenerator[bytes, None]:
        connection = self._connection
        if connection is None:
            raise httpx2.StreamClosed()
        decoder = self._framing.decoder()
        async for piece in self._framing.read(connection):
            if decoder is None:
                yield piece
                continue
            for data in decoder.decode(piece):
                yield data
        self._complete = True
        if decoder is not None and (rest := decoder.flush()):
            yield rest

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        # Bytes already read past the reply's end would be read as the next request's reply.
        reusable = self._complete and self._framing.reusable and not connection.buffer
        await self._pool.release(self._origin, connection, reusable=reusable)


@attrs.frozen
class _Framing:
    """How a reply's body ends, whether its connection may serve another request, and how
    it is encoded."""

    chunked: bool
    length: int | None
    """``None``: to the connection's end (or chunked)."""
    reusable: bool
    encoding: str

    def decoder(self) -> _Decoder | None:
        if self.encoding in ("", "identity"):
            return None
        if self.encoding in ("gzip", "deflate", "x-gzip"):
            return _Decoder(raw_deflate=self.encoding == "deflate")
        raise httpx2.DecodingError(f"Unsupported content encoding {self.encoding!r}.")

    async def read(self, connection: _Connection) -> AsyncIterator[bytes]:
        if self.chunked:
            async for piece in _chunked(connection):
                yield piece
        elif self.length is not None:
            async for piece in _sized(connection, self.length):
                yield piece
        else:
            if connection.buffer:
                yield bytes(connection.buffer)
                connection.buffer.clear()
            while data := await connection.receive():
                yield data


class _Decoder:
    """A gzip or deflate body decoded as ``httpx2`` decodes it (``deflate`` with zlib's
    header or, as some servers send it, without), at most :data:`_READ` bytes at a time:
    a small compressed read can stand for a gigabyte. A body that is not its encoding
    raises ``httpx2.DecodingError``."""

    def __init__(self, *, raw_deflate: bool) -> None:
        self._zlib = zlib.decompressobj(32 + zlib.MAX_WBITS)  # either header, told by bytes
        self._raw_deflate = raw_deflate
        self._started = False

    def decode(self, data: bytes) -> Iterator[bytes]:
        try:
            first, self._started = not self._started, True
            try:
                out = self._zlib.decompress(data, _READ)
            except zlib.error:
                if not (first and self._raw_deflate):
                    raise
                self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                out = self._zlib.decompress(data, _READ)
            while out:
                yield out
                out = self._zlib.decompress(self._zlib.unconsumed_tail, _READ)
        except zlib.error as exc:
            raise httpx2.DecodingError(str(exc)) from exc

    def flush(self) -> bytes:
        try:
            return self._zlib.flush()
        except zlib.error as exc:
            raise httpx2.DecodingError(str(exc)) from exc


async def _sized(connection: _Connection, length: int) -> AsyncIterator[bytes]:
    left = length
    buffer = connection.buffer
    while left:
        if not buffer:
            data = await connection.receive()
            if not data:
                raise httpx2.RemoteProtocolError(
                    f"{_INCOMPLETE}: received {length - left} bytes, expected {length}"
                )
            buffer += data
        piece = bytes(buffer[:left])
        del buffer[: len(piece)]
        left -= len(piece)
        yield piece


async def _line(connection: _Connection) -> bytes:
    """The next line of a chunked body (without its CRLF)."""
    buffer = connection.buffer
    while (end := buffer.find(b"\r\n")) < 0:
        if len(buffer) > _MAX_HEAD:
            raise httpx2.RemoteProtocolError("a chunk's size line is too long")
        data = await connection.receive()
        if not data:
            raise httpx2.RemoteProtocolError(f"{_INCOMPLETE}: incomplete chunked read")
        buffer += data
    line = bytes(buffer[:end])
    del buffer[: end + 2]
    return line


async def _chunked(connection: _Connection) -> AsyncIterator[bytes]:
    buffer = connection.buffer
    while True:
        line = await _line(connection)
        digits = line.split(b";", 1)[0].strip(b" \t")
        if _HEX.fullmatch(digits) is None:
            raise httpx2.RemoteProtocolError(f"a malformed chunk size: {line[:40]!r}")
        size = int(digits, 16)
        if size == 0:
            while await _line(connection):  # trailers, up to the blank line
                pass
            return
        while size:
            if not buffer:
                data = await connection.receive()
                if not data:
                    raise httpx2.RemoteProtocolError(f"{_INCOMPLETE}: incomplete chunked read")
                buffer += data
            piece = bytes(buffer[:size])
            del buffer[: len(piece)]
            size -= len(piece)
            yield piece
        if await _line(connection):
            raise httpx2.RemoteProtocolError("a chunk's data did not end where its size said")


class Http1Pool:
    """An endpoint's connections, by origin; idle ones are reused last-in first-out (calls one
    after another use one connection), none is shared by two requests at once. ``tls`` is the
    context of every ``https`` connection (:func:`actors.llm.http_hooks.tls_context`)."""

    def __init__(self, *, tls: ssl.SSLContext, keepalive: float = KEEPALIVE_S) -> None:
        # Offer HTTP/1.1 alone, so a server that speaks HTTP/2 too answers in 1.1
        # (httpcore2 sets the same on the same context before each connection).
        tls.set_alpn_protocols(["http/1.1"])
        self._tls = tls
        self._keepalive = keepalive
        self._idle: dict[_Origin, list[_Connection]] = {}
        self._closed = False
        self.opened = 0
        """Connections opened so far."""

    async def aclose(self) -> None:
        """Close every idle connection; one still in use is dropped when its reply is
        closed."""
        self._closed = True
        idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                await connection.drop()

    async def release(self, origin: _Origin, connection: _Connection, *, reusable: bool) -> None:
        """A reply is closed: its connection waits for the next request, or (its reply not
        read to the end, or the pool closed) is dropped."""
        if reusable and not self._closed:
            connection.idle_since = trio.current_time()
            self._idle.setdefault(origin, []).append(connection)
        else:
            await connection.drop()

    async def request(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        timeout: httpx2.Timeout,
    ) -> Http1Response:
        """Send the request and read its reply's head, following redirects as ``httpx2``
        does (307 and 308 resend the request; 301, 302 and 303 turn a POST into a GET
        without a body; no credential, :data:`_CREDENTIALS`, is sent to another origin).
        Cancelled, it drops the connection it was using."""
        target = _Target.parse(url)
        sent = dict(headers)
        for _ in range(MAX_REDIRECTS + 1):
            response = await self._exchange(method, target, sent, body, timeout)
            location = (
                response.headers.get("location") if response.status_code in _REDIRECTS else None
            )
            if location is None:
                return response
            try:
                await response.aread()
            finally:
                await response.aclose()
            status = response.status_code
            if status == 303 or (status in (301, 302) and method == "POST"):
                method, body = "GET", b""
                sent = {k: v for k, v in sent.items() if k.lower() != "content-type"}
            try:
                following = _Target.parse(urljoin(target.url, location))
            except httpx2.InvalidURL as exc:
                raise httpx2.RemoteProtocolError(
                    f"Invalid URL in location header: {exc}."
                ) from None
            if not _same_origin(target.origin, following.origin):
                sent = {k: v for k, v in sent.items() if k.lower() not in _CREDENTIALS}
            target = following
        raise httpx2.TooManyRedirects("Exceeded maximum allowed redirects.")

    async def _exchange(
        self,
        method: str,
        target: _Target,
        headers: Mapping[str, str],
        body: bytes,
        timeout: httpx2.Timeout,
    ) -> Http1Response:
        head = _head(method, target, headers, len(body))
        connection = await self._take(target.origin, timeout.connect)
        try:
            unsent: httpx2.WriteError | None = None
            with trio.move_on_after(_limit(timeout.write)) as writing:
                try:
                    await connection.stream.send_all(head + body if body else head)
                except (trio.BrokenResourceError, OSError) as exc:
                    unsent = httpx2.WriteError(str(exc.__cause__ or exc))
                    unsent.__cause__ = exc
            if writing.cancelled_caught:
                raise httpx2.WriteTimeout("timed out sending the request")
            # A server may answer before it read the body (a 413) and close: the send then
            # fails, but its reply is read, as httpcore2 read it; a connection whose request
            # was not sent whole is never reused.
            try:
                status, raw_headers, framing = await _read_head(connection, method)
            except httpx2.HTTPError:
                if unsent is not None:
                    raise unsent from unsent.__cause__
                raise
            if unsent is not None:
                framing = attrs.evolve(framing, reusable=False)
        except BaseException:
            await connection.drop()
            raise
        return Http1Response(self, connection, target.origin, status, raw_headers, framing)

    async def _take(self, origin: _Origin, connect: float | None) -> _Connection:
        idle = self._idle.get(origin)
        now = trio.current_time()
        while idle:
            connection = idle.pop()
            if now - connection.idle_since < self._keepalive and not connection.closed_by_peer():
                return connection
            await connection.drop()
        if self._closed:
            raise httpx2.ConnectError("the client was closed")
        connection = await self._connect(origin, connect)
        self.opened += 1
        return connection

    async def _connect(self, origin: _Origin, limit: float | None) -> _Connection:
        with trio.move_on_after(_limit(limit)):
            try:
                tcp = await _open_tcp(origin.host, origin.port)
            except OSError as exc:
                raise httpx2.ConnectError(str(exc)) from exc
            if origin.scheme != "https":
                return _Connection(tcp, tcp.socket)
            stream = trio.SSLStream(
                tcp, self._tls, server_hostname=origin.host, https_compatible=True
            )
            try:
                await stream.do_handshake()
            except BaseException as exc:
                await trio.aclose_forcefully(tcp)
                if isinstance(exc, trio.BrokenResourceError):
                    raise httpx2.ConnectError(str(exc.__cause__ or exc)) from exc
                raise
            return _Connection(stream, tcp.socket)
        raise httpx2.ConnectTimeout("timed out connecting")


async def _open_tcp(host: str, port: int) -> trio.SocketStream:
    """A TCP connection to ``host``. An IP address needs no resolving and gives one address
    to try, so it is connected to directly: ``trio.open_tcp_stream``, which resolves the name
    and races its addresses, cost 174 us of CPU per connection against 64 (at 50 agents, each
    connection serves two requests)."""
    try:
        version = ipaddress.ip_address(host).version
    except ValueError:
        return await trio.open_tcp_stream(host, port)
    sock = trio.socket.socket(socket.AF_INET6 if version == 6 else socket.AF_INET)
    try:
        await sock.connect((host, port))
    except BaseException:
        sock.close()
        raise
    return trio.SocketStream(sock)


def _limit(seconds: float | None) -> float:
    return math.inf if seconds is None else seconds


def _same_origin(old: _Origin, new: _Origin) -> bool:
    """The origins are one (or ``new`` is ``old`` moved to https on the default ports), as
    ``httpx2`` decides whether a redirect keeps ``Authorization``."""
    if old == new:
        return True
    return (
        old.host == new.host
        and (old.scheme, old.port) == ("http", 80)
        and (new.scheme, new.port) == ("https", 443)
    )


def _head(method: str, target: _Target, headers: Mapping[str, str], length: int) -> bytes:
    """The request line and headers. A header that would break the request's framing (a
    line break or another character h11 refuses in a value, a name that is not a token, a
    ``Content-Length`` or ``Transfer-Encoding`` of its own) fails as ``httpx2`` failed it; a
    ``Host`` given replaces the URL's."""
    # Names are case-insensitive: a later one (a config's extra header) replaces an earlier.
    named = {"host": ("Host", target.host_header.decode("ascii"))}
    named.update((name.lower(), (name, value)) for name, value in headers.items())
    for framing in ("content-length", "transfer-encoding"):
        if framing in named:
            raise httpx2.LocalProtocolError(
                f"Illegal header {named[framing][0]!r}: the request's body sets its framing"
            )
    lines = [f"{name}: {value}\r\n" for name, value in named.values()]
    text = "".join(lines)
    if text.count("\n") != len(lines) or text.count("\r") != len(lines):
        raise httpx2.LocalProtocolError("Illegal header value: a line break")
    if _CONTROL.search(text) is not None:
        raise httpx2.LocalProtocolError("Illegal header value: a NUL, vertical tab or form feed")
    for name, _ in named.values():
        if _TOKEN.fullmatch(name) is None:
            raise httpx2.LocalProtocolError(f"Illegal header name {name!r}")
    try:
        encoded = text.encode("ascii")
    except UnicodeEncodeError as exc:
        raise httpx2.LocalProtocolError(f"Illegal header value: {exc}") from None
    request_line = b"%s %s HTTP/1.1\r\n" % (method.encode("ascii"), target.path)
    length_line = b"Content-Length: %d\r\n\r\n" % length if length or method == "POST" else b"\r\n"
    return request_line + encoded + length_line


async def _read_head(
    connection: _Connection, method: str
) -> tuple[int, list[tuple[bytes, bytes]], _Framing]:
    """The reply's status, headers and framing (informational replies skipped)."""
    buffer = connection.buffer
    while True:
        while (end := buffer.find(b"\r\n\r\n")) < 0:
            if len(buffer) > _MAX_HEAD:
                raise httpx2.RemoteProtocolError("the response's head is too large")
            data = await connection.receive()
            if not data:
                raise httpx2.RemoteProtocolError("Server disconnected without sending a response.")
            buffer += data
        status_line, *lines = bytes(buffer[:end]).split(b"\r\n")
        del buffer[: end + 4]
        version, _, rest = status_line.partition(b" ")
        try:
            status = int(rest[:3])
        except ValueError:
            raise httpx2.RemoteProtocolError(
                f"a malformed status line: {status_line[:80]!r}"
            ) from None
        if not version.startswith(b"HTTP/1.") or not 100 <= status <= 999:
            raise httpx2.RemoteProtocolError(f"a malformed status line: {status_line[:80]!r}")
        if status == 101:  # no request asks to switch protocols
            raise httpx2.RemoteProtocolError("a 101 reply to a request that asked no upgrade")
        if status >= 200:
            break
    raw_headers = []
    chunked = False
    length: int | None = None
    reusable = version == b"HTTP/1.1"
    encoding = ""
    for line in lines:
        name, colon, value = line.partition(b":")
        if not colon:
            raise httpx2.RemoteProtocolError(f"a malformed header line: {line[:80]!r}")
        value = value.strip(b" \t")
        raw_headers.append((name, value))
        lowered = name.lower()
        if lowered == b"content-length":
            if _DIGITS.fullmatch(value) is None or length not in (None, int(value)):
                raise httpx2.RemoteProtocolError(f"a malformed Content-Length: {value[:40]!r}")
            length = int(value)
        elif lowered == b"transfer-encoding":
            if value.lower() != b"chunked":  # as h11: the one coding a body is framed by
                raise httpx2.RemoteProtocolError(
                    f"an unsupported Transfer-Encoding: {value[:40]!r}"
                )
            chunked = True
        elif lowered == b"connection":
            tokens = value.lower()
            if b"close" in tokens:
                reusable = False
            elif b"keep-alive" in tokens:
                reusable = True
        elif lowered == b"content-encoding":
            encoding = value.strip().lower().decode("latin-1")
    if method == "HEAD" or status in _NO_BODY or status < 200:
        chunked, length = False, 0
    elif chunked:
        # A Content-Length beside it is ignored, and the connection closed after (RFC 9112
        # 6.3): a reply framed two ways may be read otherwise by what stands in between.
        reusable = reusable and length is None
        length = None
    elif length is None:
        reusable = False  # the body ends with the connection
    return status, raw_headers, _Framing(chunked, length, reusable, encoding)
