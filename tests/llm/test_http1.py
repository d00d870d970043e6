"""The openai backend's own HTTP/1.1 connections, against a real server on loopback that
writes replies byte for byte as scripted: how a body ends, when a connection is reused, how
redirects are followed, and which failures are raised as which ``httpx2`` errors."""

from __future__ import annotations

import gzip
import ssl
import subprocess
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import attrs
import httpx2
import pytest
import trio

from conclave.actors.llm.http1 import Http1Pool, proxy_configured

TIMEOUT = httpx2.Timeout(5.0)
HEADERS = {"Content-Type": "application/json", "Authorization": "Bearer k"}


@attrs.frozen
class Canned:
    """One reply, written as given; ``close``: the server then closes the connection
    without saying so (as a server closes an idle keep-alive connection)."""

    data: bytes
    close: bool = False


@attrs.define
class RawServer:
    url: str
    replies: list[Canned]
    requests: list[bytes] = attrs.field(factory=list)
    """Each request's head (request line and headers) and body, as read."""
    connections: int = 0
    closed: trio.Event = attrs.field(factory=trio.Event)
    """Set when the server closed a connection."""


async def _request(stream: trio.abc.Stream, buffer: bytearray) -> bytes | None:
    while b"\r\n\r\n" not in buffer:
        data = await stream.receive_some(65536)
        if not data:
            return None
        buffer += data
    head, _, _ = bytes(buffer).partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    end = len(head) + 4 + length
    while len(buffer) < end:
        buffer += await stream.receive_some(65536)
    request = bytes(buffer[:end])
    del buffer[:end]
    return request


@asynccontextmanager
async def raw_server(
    *replies: Canned, tls: ssl.SSLContext | None = None
) -> AsyncIterator[RawServer]:
    """Serves ``replies`` in order, over TLS with ``tls`` (a server context)."""
    tcp_listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = tcp_listeners[0].socket.getsockname()[1]
    scheme = "http" if tls is None else "https"
    server = RawServer(url=f"{scheme}://127.0.0.1:{port}", replies=list(replies))
    listeners: list[trio.abc.Listener[trio.abc.Stream]] = list(tcp_listeners)
    if tls is not None:
        listeners = [trio.SSLListener(listener, tls) for listener in tcp_listeners]

    async def serve(stream: trio.abc.Stream) -> None:
        server.connections += 1
        buffer = bytearray()
        try:
            if isinstance(stream, trio.SSLStream):
                await stream.do_handshake()
                if stream.selected_alpn_protocol() == "h2":
                    return  # an HTTP/2 server: HTTP/1.1 requests get nothing
            while (request := await _request(stream, buffer)) is not None:
                server.requests.append(request)
                reply = server.replies.pop(0)
                await stream.send_all(reply.data)
                if reply.close:
                    return
        except trio.BrokenResourceError:
            return
        finally:
            server.closed.set()
            await stream.aclose()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.serve_listeners, serve, listeners)
        yield server
        nursery.cancel_scope.cancel()


def _pool(tls: ssl.SSLContext | None = None, **settings: float) -> Http1Pool:
    return Http1Pool(tls=tls or ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT), **settings)


def _certificate(directory: Path) -> tuple[ssl.SSLContext, Path]:
    """A server context with a fresh self-signed certificate for 127.0.0.1, and the file a
    client trusts it by."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    key_type = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    subject = ["-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1"]
    files = ["-keyout", str(key), "-out", str(cert)]
    subprocess.run(
        ["openssl", "req", "-x509", *key_type, *subject, "-days", "1", *files],
        check=True,
        capture_output=True,
    )
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)
    return server, cert


def ok(body: bytes, *headers: str) -> Canned:
    head = "".join(f"{h}\r\n" for h in (f"Content-Length: {len(body)}", *headers))
    return Canned(b"HTTP/1.1 200 OK\r\n" + head.encode() + b"\r\n" + body)


async def _get(pool: Http1Pool, url: str, headers: dict[str, str] = HEADERS) -> bytes:
    response = await pool.request("POST", f"{url}/v1/chat/completions", headers, b"{}", TIMEOUT)
    try:
        return await response.aread()
    finally:
        await response.aclose()


async def test_a_body_of_content_length_is_read_and_its_connection_reused() -> None:
    async with raw_server(ok(b"first"), ok(b"second")) as server:
        pool = _pool()
        assert await _get(pool, server.url) == b"first"
        assert await _get(pool, server.url) == b"second"
        await pool.aclose()
    assert (server.connections, pool.opened) == (1, 1)


async def test_a_server_named_by_a_host_name_is_reached_through_its_resolved_address() -> None:
    async with raw_server(ok(b"named")) as server:
        pool = _pool()
        assert await _get(pool, server.url.replace("127.0.0.1", "localhost")) == b"named"
        await pool.aclose()
    assert server.requests[0].split(b"\r\n")[1].startswith(b"Host: localhost:")


async def test_the_request_carries_its_host_length_headers_and_body() -> None:
    async with raw_server(ok(b"")) as server:
        pool = _pool()
        await _get(pool, server.url)
        await pool.aclose()
    port = server.url.rsplit(":", 1)[1]
    assert server.requests[0] == (
        b"POST /v1/chat/completions HTTP/1.1\r\n"
        b"Host: 127.0.0.1:" + port.encode() + b"\r\n"
        b"Content-Type: application/json\r\nAuthorization: Bearer k\r\n"
        b"Content-Length: 2\r\n\r\n{}"
    )


async def test_a_body_without_a_length_ends_with_the_connection_which_is_not_reused() -> None:
    async with raw_server(
        Canned(b"HTTP/1.1 200 OK\r\n\r\nto the end", close=True), ok(b"next")
    ) as server:
        pool = _pool()
        assert await _get(pool, server.url) == b"to the end"
        assert await _get(pool, server.url) == b"next"
        await pool.aclose()
    assert server.connections == 2


async def test_a_chunked_body_with_extensions_and_trailers_is_read_whole() -> None:
    body = b"4;name=value\r\nWiki\r\n5\r\npedia\r\n0\r\nExpires: never\r\n\r\n"
    chunked = Canned(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body)
    async with raw_server(chunked, ok(b"again")) as server:
        pool = _pool()
        assert await _get(pool, server.url) == b"Wikipedia"
        assert await _get(pool, server.url) == b"again"
        await pool.aclose()
    assert server.connections == 1


async def test_a_chunked_body_cut_short_fails_as_httpx2_says() -> None:
    cut = Canned(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nhalf", close=True)
    async with raw_server(cut) as server:
        pool = _pool()
        with pytest.raises(httpx2.RemoteProtocolError, match="incomplete chunked read"):
            await _get(pool, server.url)
        await pool.aclose()


async def test_a_body_shorter_than_its_length_fails_saying_how_much_came() -> None:
    cut = Canned(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf", close=True)
    async with raw_server(cut) as server:
        pool = _pool()
        with pytest.raises(httpx2.RemoteProtocolError, match="received 4 bytes, expected 10"):
            await _get(pool, server.url)
        await pool.aclose()


async def test_a_gzip_encoded_body_is_decoded() -> None:
    async with raw_server(ok(gzip.compress(b"data: {}\n\n"), "Content-Encoding: gzip")) as server:
        pool = _pool()
        assert await _get(pool, server.url) == b"data: {}\n\n"
        await pool.aclose()


async def test_a_reply_that_says_connection_close_is_not_reused() -> None:
    async with raw_server(ok(b"one", "Connection: close"), ok(b"two")) as server:
        pool = _pool()
        await _get(pool, server.url)
        await _get(pool, server.url)
        await pool.aclose()
    assert server.connections == 2


async def test_an_idle_connection_the_server_closed_is_not_reused() -> None:
    async with raw_server(Canned(ok(b"one").data, close=True), ok(b"two")) as server:
        pool = _pool()
        await _get(pool, server.url)
        with trio.fail_after(5):
            await server.closed.wait()
        # Reused, the request would meet a closed connection: "Server disconnected".
        assert await _get(pool, server.url) == b"two"
        await pool.aclose()
    assert server.connections == 2


async def test_a_connection_idle_past_its_keepalive_is_not_reused() -> None:
    async with raw_server(ok(b"one"), ok(b"two")) as server:
        pool = _pool(keepalive=0.05)
        await _get(pool, server.url)
        await trio.sleep(0.1)
        await _get(pool, server.url)
        await pool.aclose()
    assert server.connections == 2


async def test_a_redirect_to_another_origin_is_followed_without_the_authorization() -> None:
    async with raw_server(ok(b"moved")) as there:
        location = f"Location: {there.url}/v2/chat/completions"
        redirect = Canned(b"HTTP/1.1 307 Temporary Redirect\r\n" + location.encode() + b"\r\n")
        redirect = attrs.evolve(redirect, data=redirect.data + b"Content-Length: 0\r\n\r\n")
        async with raw_server(redirect) as here:
            pool = _pool()
            assert await _get(pool, here.url) == b"moved"
            await pool.aclose()
    assert here.requests[0].startswith(b"POST /v1/")
    assert b"Authorization" in here.requests[0]
    assert there.requests[0].startswith(b"POST /v2/chat/completions")
    assert b"Authorization" not in there.requests[0]
    assert there.requests[0].endswith(b"\r\n\r\n{}")


async def test_a_303_turns_the_post_into_a_get_without_a_body() -> None:
    see_other = Canned(
        b"HTTP/1.1 303 See Other\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n"
    )
    async with raw_server(see_other, ok(b"got")) as server:
        pool = _pool()
        assert await _get(pool, server.url) == b"got"
        await pool.aclose()
    assert server.requests[1].startswith(b"GET /elsewhere HTTP/1.1\r\n")
    assert server.requests[1].endswith(b"Authorization: Bearer k\r\n\r\n")


async def test_a_redirect_loop_fails_after_the_redirects_httpx2_allows() -> None:
    loop = b"HTTP/1.1 307 Temporary Redirect\r\nLocation: /v1/chat/completions\r\n"
    async with raw_server(*[Canned(loop + b"Content-Length: 0\r\n\r\n")] * 21) as server:
        pool = _pool()
        with pytest.raises(httpx2.TooManyRedirects):
            await _get(pool, server.url)
        await pool.aclose()
    assert len(server.requests) == 21


async def test_a_header_value_with_a_line_break_is_refused_before_anything_is_sent() -> None:
    async with raw_server() as server:
        pool = _pool()
        with pytest.raises(httpx2.LocalProtocolError):
            await _get(pool, server.url, {"X-Injected": "a\r\nHost: elsewhere"})
        await pool.aclose()
    assert server.connections == 0


@pytest.mark.parametrize("name", ["X Spaced", "X:Colon", "", "X-Ünicode"])
async def test_a_header_name_that_is_not_a_token_is_refused_before_anything_is_sent(
    name: str,
) -> None:
    async with raw_server() as server:
        pool = _pool()
        with pytest.raises(httpx2.LocalProtocolError, match="Illegal header name"):
            await _get(pool, server.url, {name: "value"})
        await pool.aclose()
    assert server.connections == 0


async def test_a_server_that_closes_without_replying_fails_as_httpx2_says() -> None:
    async with raw_server(Canned(b"", close=True)) as server:
        pool = _pool()
        with pytest.raises(httpx2.RemoteProtocolError, match="without sending a response"):
            await _get(pool, server.url)
        await pool.aclose()


async def test_an_https_server_is_reached_over_tls_verified_by_the_endpoints_context(
    tmp_path: Path,
) -> None:
    server_tls, cert = _certificate(tmp_path)
    async with raw_server(ok(b"secret"), ok(b"again"), tls=server_tls) as server:
        pool = _pool(ssl.create_default_context(cafile=cert))
        assert await _get(pool, server.url) == b"secret"
        assert await _get(pool, server.url) == b"again"
        await pool.aclose()
    assert server.connections == 1


async def test_an_https_server_that_speaks_http2_too_is_offered_http11_alone(
    tmp_path: Path,
) -> None:
    server_tls, cert = _certificate(tmp_path)
    server_tls.set_alpn_protocols(["h2", "http/1.1"])
    client_tls = ssl.create_default_context(cafile=cert)
    client_tls.set_alpn_protocols(["h2", "http/1.1"])  # as another client may have left it
    async with raw_server(ok(b"in 1.1"), tls=server_tls) as server:
        pool = _pool(client_tls)
        assert await _get(pool, server.url) == b"in 1.1"
        await pool.aclose()


async def test_an_https_server_whose_certificate_is_not_trusted_is_a_connect_error(
    tmp_path: Path,
) -> None:
    server_tls, _ = _certificate(tmp_path)
    async with raw_server(ok(b"never"), tls=server_tls) as server:
        pool = _pool(ssl.create_default_context())  # the system's trust: not this certificate
        with pytest.raises(httpx2.ConnectError) as caught:
            await _get(pool, server.url)
        await pool.aclose()
    assert isinstance(caught.value.__cause__, trio.BrokenResourceError)
    assert isinstance(caught.value.__cause__.__cause__, ssl.SSLCertVerificationError)


@pytest.mark.parametrize(
    ("environ", "proxied"),
    [
        ({}, False),
        ({"HTTPS_PROXY": "http://proxy:3128"}, True),
        ({"http_proxy": "http://proxy:3128"}, True),
        ({"ALL_PROXY": "socks5://proxy:1080"}, True),
        ({"HTTPS_PROXY": ""}, False),
        ({"NO_PROXY": "*"}, False),
    ],
)
def test_requests_go_through_httpx2_when_the_environment_names_a_proxy(
    environ: dict[str, str], proxied: bool
) -> None:
    assert proxy_configured(environ) is proxied


def _redirect(location: bytes, status: bytes = b"307 Temporary Redirect") -> Canned:
    return Canned(b"HTTP/1.1 %s\r\nLocation: %s\r\nContent-Length: 0\r\n\r\n" % (status, location))


async def test_bytes_past_a_replys_end_are_never_read_as_the_next_reply() -> None:
    # The server wrote more than the first reply's length: reused, the connection would give
    # the second request the tail as its reply.
    async with raw_server(Canned(ok(b"one").data + ok(b"tail").data), ok(b"two")) as server:
        pool = _pool()
        assert await _get(pool, server.url) == b"one"
        assert await _get(pool, server.url) == b"two"
        await pool.aclose()
    assert server.connections == 2


@pytest.mark.parametrize("length", [b"-1", b"+2", b"0x2", b"1_0", b"2 2"])
async def test_a_content_length_that_is_not_digits_alone_is_refused(length: bytes) -> None:
    reply = Canned(b"HTTP/1.1 200 OK\r\nContent-Length: %s\r\n\r\nok" % length)
    async with raw_server(reply) as server:
        pool = _pool()
        with trio.fail_after(5), pytest.raises(httpx2.RemoteProtocolError, match="Content-Length"):
            await _get(pool, server.url)
        await pool.aclose()


async def test_differing_content_lengths_are_refused() -> None:
    reply = Canned(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\nok")
    async with raw_server(reply) as server:
        pool = _pool()
        with pytest.raises(httpx2.RemoteProtocolError, match="Content-Length"):
            await _get(pool, server.url)
        await pool.aclose()


@pytest.mark.parametrize("size", [b"-4", b"+4", b"0x4", b"4_0", b""])
async def test_a_chunk_size_that_is_not_hex_digits_alone_is_refused(size: bytes) -> None:
    body = b"%s\r\nWiki\r\n0\r\n\r\n" % size
    reply = Canned(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body)
    async with raw_server(reply) as server:
        pool = _pool()
        with trio.fail_after(5), pytest.raises(httpx2.RemoteProtocolError, match="chunk size"):
            await _get(pool, server.url)
        await pool.aclose()


async def test_a_raw_deflate_body_is_decoded_as_httpx2_decodes_it() -> None:
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)  # deflate without zlib's header
    raw = compressor.compress(b"data: {}\n\n") + compressor.flush()
    async with raw_server(ok(raw, "Content-Encoding: deflate")) as server:
        pool = _pool()
        assert await _get(pool, server.url) == b"data: {}\n\n"
        await pool.aclose()


async def test_a_body_that_is_not_its_encoding_is_a_decoding_error() -> None:
    async with raw_server(ok(b"not gzip at all", "Content-Encoding: gzip")) as server:
        pool = _pool()
        with pytest.raises(httpx2.DecodingError):
            await _get(pool, server.url)
        await pool.aclose()


async def test_a_compressed_body_is_decoded_a_bounded_piece_at_a_time() -> None:
    bomb = gzip.compress(bytes(16 * 1024 * 1024))  # 16 MiB of zeros in ~16 KiB
    async with raw_server(ok(bomb, "Content-Encoding: gzip")) as server:
        pool = _pool()
        response = await pool.request("POST", f"{server.url}/v1", HEADERS, b"{}", TIMEOUT)
        sizes = [len(piece) async for piece in response.aiter_bytes()]
        await response.aclose()
        await pool.aclose()
    assert sum(sizes) == 16 * 1024 * 1024
    assert max(sizes) <= 65536


@pytest.mark.parametrize("value", ["a\x00b", "a\x0bb", "a\x0cb"])
async def test_a_header_value_with_a_control_character_is_refused_before_anything_is_sent(
    value: str,
) -> None:
    async with raw_server() as server:
        pool = _pool()
        with pytest.raises(httpx2.LocalProtocolError, match="Illegal header value"):
            await _get(pool, server.url, {"X-Value": value})
        await pool.aclose()
    assert server.connections == 0


@pytest.mark.parametrize("name", ["Content-Length", "transfer-encoding"])
async def test_a_header_that_frames_the_body_is_refused_before_anything_is_sent(
    name: str,
) -> None:
    # Sent beside the request's own Content-Length, it would let the server read the body
    # as another request.
    async with raw_server() as server:
        pool = _pool()
        with pytest.raises(httpx2.LocalProtocolError, match=name):
            await _get(pool, server.url, {**HEADERS, name: "0"})
        await pool.aclose()
    assert server.connections == 0


async def test_a_host_header_given_replaces_the_urls_rather_than_repeat_it() -> None:
    async with raw_server(ok(b"")) as server:
        pool = _pool()
        await _get(pool, server.url, {**HEADERS, "host": "virtual.example"})
        await pool.aclose()
    head = server.requests[0].lower()
    assert head.count(b"\r\nhost: ") == 1
    assert b"\r\nhost: virtual.example\r\n" in head


async def test_a_redirect_location_is_percent_encoded_as_httpx2_encodes_it() -> None:
    async with raw_server(_redirect("/a b/ü?q=x y".encode()), ok(b"there")) as server:
        pool = _pool()
        assert await _get(pool, server.url) == b"there"
        await pool.aclose()
    assert server.requests[1].startswith(b"POST /a%20b/%C3%BC?q=x%20y HTTP/1.1\r\n")


@pytest.mark.parametrize("location", [b"file:///etc/passwd", b"ftp://127.0.0.1/x"])
async def test_a_redirect_to_a_scheme_other_than_http_is_refused(location: bytes) -> None:
    async with raw_server(_redirect(location)) as server:
        pool = _pool()
        with pytest.raises(httpx2.UnsupportedProtocol):
            await _get(pool, server.url)
        await pool.aclose()


async def test_a_redirect_to_another_origin_drops_every_credential_header() -> None:
    credentials = {"api-key": "az", "X-Api-Key": "an", "Authorization": "Bearer k"}
    async with (
        raw_server(ok(b"moved")) as there,
        raw_server(_redirect(f"{there.url}/v2".encode())) as here,
    ):
        pool = _pool()
        await _get(pool, here.url, {**HEADERS, **credentials})
        await pool.aclose()
    assert b"api-key: az" in here.requests[0]
    assert b"api-key" not in there.requests[0].lower()
    assert b"authorization" not in there.requests[0].lower()


async def test_a_redirect_to_the_same_origin_keeps_the_credential_headers() -> None:
    async with raw_server(_redirect(b"/v2"), ok(b"moved")) as server:
        pool = _pool()
        await _get(pool, server.url, {**HEADERS, "api-key": "az"})
        await pool.aclose()
    assert b"api-key: az" in server.requests[1]


@pytest.mark.parametrize("coding", [b"gzip", b"gzip, chunked", b"chunked, gzip"])
async def test_a_transfer_coding_other_than_chunked_is_refused(coding: bytes) -> None:
    # Framed by its Content-Length as it was, the body's end would be wherever the length
    # said, not where the coding ends it.
    reply = Canned(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: %s\r\nContent-Length: 2\r\n\r\nok" % coding
    )
    async with raw_server(reply) as server:
        pool = _pool()
        with trio.fail_after(5), pytest.raises(httpx2.RemoteProtocolError, match="Transfer"):
            await _get(pool, server.url)
        await pool.aclose()


async def test_a_chunked_reply_that_has_a_content_length_too_is_read_but_not_reused() -> None:
    both = b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n"
    async with raw_server(Canned(both + b"3\r\nabc\r\n0\r\n\r\n"), ok(b"after")) as server:
        pool = _pool()
        assert await _get(pool, server.url) == b"abc"
        assert await _get(pool, server.url) == b"after"
        await pool.aclose()
    assert server.connections == 2


async def test_a_101_to_a_request_that_asked_no_upgrade_is_refused() -> None:
    switching = Canned(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: other\r\n\r\n")
    async with raw_server(switching) as server:
        pool = _pool()
        with pytest.raises(httpx2.RemoteProtocolError, match="101"):
            await _get(pool, server.url)
        await pool.aclose()


async def test_a_reply_sent_before_the_request_body_was_read_is_still_read() -> None:
    # A server refusing a body too large answers at once and closes, unread bytes and all
    # (the client's send then fails): httpcore2 read the reply anyway, and so does this.
    refusal = (
        b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 8\r\nConnection: close\r\n\r\ntoo big!"
    )

    async def refuse(stream: trio.SocketStream) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            data += await stream.receive_some(65536)
        await stream.send_all(refusal)
        await stream.aclose()

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, refuse, 0, host="127.0.0.1"))
        port = listeners[0].socket.getsockname()[1]
        pool = _pool()
        body = bytes(32 * 1024 * 1024)
        response = await pool.request("POST", f"http://127.0.0.1:{port}/v1", HEADERS, body, TIMEOUT)
        assert response.status_code == 413
        assert await response.aread() == b"too big!"
        await response.aclose()
        await pool.aclose()
        nursery.cancel_scope.cancel()
