"""The websocket server: connections, their sessions, and an orderly stop.

``async with open_server(settings, host=..., port=...) as server:`` listens (a backlog of
:data:`BACKLOG`), serves until the block ends, then stops in order (:meth:`Server.stop`):
it stops listening, cancels every run (each concludes with its best answer so far), lets
clients receive the runs' last lines for up to ``shutdown_grace`` seconds, and closes every
connection with 1001. Cancelling the block instead stops everything at once; runs still
conclude (their logs end with ``run_ended``).

Each connection is read for its request head first (:mod:`ui.serve.health`): ``GET
/health`` is answered in plain HTTP, a websocket handshake goes to trio-websocket. A
handshake is checked before it is accepted: an ``Origin`` not allowed gets 403, a wrong
token 401; one without a token is accepted and must send ``auth`` first.

A :class:`Session` serves one authenticated connection: it reads client messages, replies,
and runs one task per watched run (a *pump*). The run's feed (:mod:`ui.serve.feed`) seals
its lines into frames shared by every watcher, and writes each new frame at once to every
caught-up client whose socket takes it; the pump sends only the rest: the snapshot, and
what a full socket or a send in progress held back. Nothing a client sends can crash the
server: every bad frame gets an ``error`` frame. A client that
reads too slowly is dropped: told ``fell_behind`` if its socket still takes data, and
closed (:attr:`CloseCode.FELL_BEHIND`), or cut off after ``shutdown_grace`` seconds if not.
The runs never wait for a client.

A failure inside one connection's task (a bug, whatever raised it) ends that connection
only: closed with :attr:`CloseCode.INTERNAL_ERROR` once it has a websocket, and one line in
the server's log (``say``). Every connection runs in one nursery, beside the runs', so an
error escaping one would otherwise stop the server and every run of every client.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import trio
from trio_websocket import (
    ConnectionClosed,
    WebSocketConnection,
    WebSocketRequest,
    wrap_server_stream,
)

from conclave.actors.llm.pool import open_backends
from conclave.ui.serve.auth import presented_token, refused_origin, token_matches
from conclave.ui.serve.encoding import FrameEncoding, negotiate
from conclave.ui.serve.feed import Watcher
from conclave.ui.serve.health import ReplayStream, read_head, respond_json
from conclave.ui.serve.protocol import (
    Accepted,
    Ack,
    Answer,
    Approve,
    Auth,
    Cancel,
    ClientMessage,
    CloseCode,
    Continue,
    Correct,
    ErrorCode,
    ErrorFrame,
    Override,
    ProtocolError,
    ServerMessage,
    StartRun,
    Subscribe,
    Unsubscribe,
    Verdict,
    Welcome,
    decode_client,
    encode_server,
)
from conclave.ui.serve.raw_frames import send_frames, write_now
from conclave.ui.serve.runs import RunRegistry, ServedRun, ServeSettings

__all__ = ["BACKLOG", "Server", "Session", "open_server"]

BACKLOG = 1024
"""Pending connections the kernel queues: many clients connecting at once are not refused."""
HEAD_TIMEOUT = 10.0
"""Seconds a new connection has to send its request head."""
MAX_CLIENT_MESSAGE = 2 * 1024 * 1024
"""The largest frame a client may send (a task may be 1 MiB; JSON escapes grow it)."""
REPLY_BUFFER = 256
"""Replies a client may have unread before it is dropped as too slow."""


@functools.cache
def _version() -> str:
    """The package's version (looked up once: it reads the installed metadata)."""
    try:
        return version("conclave")
    except PackageNotFoundError:
        return "unknown"


class Server:
    """The listening server; see the module docstring."""

    def __init__(
        self,
        settings: ServeSettings,
        registry: RunRegistry,
        listeners: list[trio.SocketListener],
        connections: trio.Nursery,
        say: Callable[[str], None],
    ) -> None:
        self.settings = settings
        self.registry = registry
        self.listeners = listeners
        self.sessions: set[Session] = set()
        self._connections = connections
        self._say = say
        self._names = itertools.count(1)
        self._listening = trio.CancelScope()
        self._stopped = False

    @property
    def port(self) -> int:
        port: int = self.listeners[0].socket.getsockname()[1]
        return port

    def health(self) -> dict[str, Any]:
        return {
            "status": "stopping" if self.registry.closing else "ok",
            "version": _version(),
            "runs": self.registry.active,
            "clients": len(self.sessions),
        }

    async def _listen(self) -> None:
        with self._listening:
            await trio.serve_listeners(
                self._connection, self.listeners, handler_nursery=self._connections
            )

    async def _connection(self, stream: trio.SocketStream) -> None:
        """One TCP connection, from its first byte to its close. Whatever fails in it ends
        it alone, with a line in the server's log: an error here would otherwise end the
        nursery that holds every connection, and the server's runs with it."""
        failure: BaseException | None = None
        try:
            await self._serve_stream(stream)
        except* Exception as group:
            failure = group
        if failure is not None:
            self._say(f"a connection failed and was closed: {_describe(failure)}")

    async def _serve_stream(self, stream: trio.SocketStream) -> None:
        async with stream:
            try:
                with trio.fail_after(HEAD_TIMEOUT):
                    head = await read_head(stream)
            except ValueError as exc:
                status = 431 if "too long" in str(exc) else 400
                await _quietly(respond_json(stream, status, {"error": str(exc)}))
                return
            except (trio.TooSlowError, trio.BrokenResourceError):
                return
            if head is None:
                return
            if not head.upgrade:
                await _quietly(self._plain(stream, head.method, head.path))
                return
            replay = ReplayStream(stream, head.data)
            async with trio.open_nursery() as nursery:
                request = await wrap_server_stream(
                    nursery, replay, max_message_size=MAX_CLIENT_MESSAGE
                )
                try:
                    await self._handshake(request, replay)
                finally:
                    nursery.cancel_scope.cancel()

    async def _plain(self, stream: trio.SocketStream, method: str, path: str) -> None:
        head_only = method == "HEAD"
        if path != "/health":
            body = {"error": f"no page {path!r}: GET /health, or open a websocket on this port"}
            await respond_json(stream, 404, body, head_only=head_only)
        elif method not in ("GET", "HEAD"):
            await respond_json(stream, 405, {"error": "/health answers GET"})
        else:
            await respond_json(stream, 200, self.health(), head_only=head_only)

    async def _handshake(self, request: WebSocketRequest, stream: ReplayStream) -> None:
        """Check the handshake; accept it and serve the session, or reject it."""
        settings = self.settings
        origin = refused_origin(request.headers, settings.allowed_origins)
        if origin is not None:
            reason = (
                f"origin {origin!r} is not allowed; start conclave serve with "
                f"--allow-origin {origin} to let pages from it connect\n"
            )
            await _quietly(request.reject(403, body=reason.encode("utf-8")))
            return
        proposed = request.proposed_subprotocols
        token = presented_token(request.headers, proposed)
        if token is not None and not token_matches(token, settings.token):
            reason = "wrong token: present the token conclave serve printed or read from its file\n"
            await _quietly(request.reject(401, body=reason.encode("utf-8")))
            return
        subprotocol, encoding = negotiate(proposed)
        try:
            ws = await request.accept(subprotocol=subprotocol)
        except ConnectionClosed:
            return
        name = f"client-{next(self._names)}"
        session = Session(self, ws, stream, name=name, encoding=encoding)
        self.sessions.add(session)
        failure: BaseException | None = None
        try:
            await session.serve(authenticated=token is not None)
        except* Exception as group:
            failure = group
        finally:
            self.sessions.discard(session)
            code = CloseCode.INTERNAL_ERROR if failure is not None else 1000
            with trio.move_on_after(1.0) as scope:
                scope.shield = True
                await ws.aclose(code, "internal error" if failure is not None else None)
        if failure is not None:
            self._say(
                f"{session.name}: closed with {int(CloseCode.INTERNAL_ERROR)} after an internal "
                f"error; the server and its runs go on: {_describe(failure)}"
            )

    async def stop(self) -> None:
        """Stop in order; see the module docstring. Bounded by about twice
        ``shutdown_grace`` seconds; a second call returns at once."""
        if self._stopped:
            return
        self._stopped = True
        self._listening.cancel()
        self.registry.cancel_all()
        grace = self.settings.shutdown_grace
        with trio.move_on_after(grace):
            await self.registry.wait_idle()
        with trio.move_on_after(grace):
            async with trio.open_nursery() as nursery:
                for session in list(self.sessions):
                    nursery.start_soon(session.drain)


_DESCRIBED = 300
"""Characters of an error a log line shows: the text may quote what a client sent."""


def _describe(failure: BaseException) -> str:
    """The error behind ``failure`` (the first of a group) on one bounded line."""
    while isinstance(failure, BaseExceptionGroup) and failure.exceptions:
        failure = failure.exceptions[0]
    text = " ".join(f"{type(failure).__name__}: {failure}".split())
    return text if len(text) <= _DESCRIBED else f"{text[: _DESCRIBED - 3]}..."


async def _quietly(operation: Any) -> None:
    """Send a last answer to a peer that may already be gone."""
    with suppress(trio.BrokenResourceError, trio.ClosedResourceError, ConnectionClosed):
        await operation


class _Subscription:
    """A session's watch of one run: its watcher, the lines to send before the run's
    (``run_accepted`` or ``snapshot``; ``None``: the snapshot of the boundary the watcher
    joins at), and the scope its pump waits in."""

    def __init__(
        self, run: ServedRun, watcher: Watcher, request_id: str | None, preamble: list[str] | None
    ) -> None:
        self.run = run
        self.watcher = watcher
        self.request_id = request_id
        self.preamble = preamble
        self.stopped = False
        self.waiting = trio.CancelScope()

    def stop(self) -> None:
        """End the pump at its next wait (never in the middle of a frame)."""
        self.stopped = True
        self.waiting.cancel()
        self.watcher.close()


class Session:
    """One authenticated client connection; see the module docstring."""

    def __init__(
        self,
        server: Server,
        ws: WebSocketConnection,
        stream: ReplayStream,
        *,
        name: str,
        encoding: FrameEncoding,
    ) -> None:
        self.server = server
        self.ws = ws
        self.name = name
        self.encoding = encoding
        """How the runs' frames and snapshots are written to it (its subprotocol says)."""
        self.subscriptions: dict[str, _Subscription] = {}
        self._stream = stream
        self._send_reply, self._replies = trio.open_memory_channel[str](REPLY_BUFFER)
        self._nursery: trio.Nursery | None = None
        self._expelled: str | None = None
        self._quiet = trio.Event()
        """Set when no pump is running (for :meth:`drain` and expulsion)."""
        self._quiet.set()
        self._draining = False
        self._drained = trio.Event()
        """Set once :meth:`drain` is over, however it ended."""

    # ------------------------------------------------------------------ life

    async def serve(self, *, authenticated: bool) -> None:
        """Until the client leaves (or is dropped, or the server stops). Cancelling it
        ends the session at once; the runs it started go on."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            if not authenticated and not await self._authenticate():
                nursery.cancel_scope.cancel()
                return
            runs = [run.summary() for run in self.server.registry.runs()]
            # Sent before anything is read, so it is the first frame whatever follows.
            if not await self._send([encode_server(Welcome(version=_version(), runs=runs))]):
                return
            nursery.start_soon(self._reply_pump)
            await self._read()
            if self._draining:
                # Reading ended because drain is closing: its closing handshake needs the
                # connection's reader, which stops with this session.
                await self._drained.wait()
            nursery.cancel_scope.cancel()

    async def _authenticate(self) -> bool:
        """The first message must be ``auth`` with the token, within ``auth_timeout``."""
        settings = self.server.settings
        error = "the first message must be auth with the token (or send it in the handshake)"
        with trio.move_on_after(settings.auth_timeout) as scope:
            try:
                frame = await self.ws.get_message()
            except ConnectionClosed:
                return False
            try:
                message = decode_client(frame)
            except ProtocolError as exc:
                error = f"{error}: {exc.message}"
            else:
                if isinstance(message, Auth):
                    if token_matches(message.token, settings.token):
                        return True
                    error = "wrong token: present the token conclave serve printed or read"
        if scope.cancelled_caught:
            error = f"no auth message within {settings.auth_timeout:g} s; {error}"
        frame_text = encode_server(ErrorFrame(code=ErrorCode.UNAUTHORIZED, message=error))
        with trio.move_on_after(1.0):
            try:
                await self.ws.send_message(frame_text)
                await self.ws.aclose(CloseCode.UNAUTHORIZED, "unauthorized")
            except ConnectionClosed:
                pass
        return False

    async def _read(self) -> None:
        while True:
            try:
                frame = await self.ws.get_message()
            except ConnectionClosed:
                return
            try:
                self._handle(decode_client(frame))
            except ProtocolError as exc:
                self.reply(
                    ErrorFrame(code=exc.code, message=exc.message, request_id=exc.request_id)
                )

    async def drain(self) -> None:
        """The server stops: let the pumps send the (ended) runs' last lines, then close
        with 1001. Cancelled (the grace is over), the session ends as it would have."""
        self._draining = True
        try:
            await self._quiet.wait()
            with suppress(ConnectionClosed):
                await self.ws.aclose(1001, "the server is stopping")
        finally:
            self._drained.set()

    # ------------------------------------------------------------------ messages

    def _handle(self, message: ClientMessage) -> None:
        registry = self.server.registry
        rid = message.request_id
        if isinstance(message, Auth):
            self.reply(Ack(request="auth", run_id=None, request_id=rid))
        elif isinstance(message, StartRun):
            run = registry.start(message)
            accepted = Accepted(
                run_id=run.run_id,
                request_id=rid,
                log_dir=str(run.spec.log_dir) if run.spec.log_dir else None,
            )
            if message.watch:
                self._subscribe(run, rid, [encode_server(accepted)])
            else:
                self.reply(accepted)
        elif isinstance(message, Subscribe):
            run = registry.get(message.run_id, request_id=rid)
            if run.run_id in self.subscriptions:
                raise ProtocolError(
                    ErrorCode.ALREADY_SUBSCRIBED,
                    f"already subscribed to run {run.run_id!r}",
                    request_id=rid,
                )
            self._subscribe(run, rid, None)
        elif isinstance(message, Unsubscribe):
            subscription = self.subscriptions.pop(message.run_id, None)
            if subscription is None:
                raise ProtocolError(
                    ErrorCode.NOT_SUBSCRIBED,
                    f"not subscribed to run {message.run_id!r}",
                    request_id=rid,
                )
            subscription.stop()
            self.reply(Ack(request="unsubscribe", run_id=message.run_id, request_id=rid))
        elif isinstance(message, Cancel):
            registry.get(message.run_id, request_id=rid).cancel()
            self.reply(Ack(request="cancel", run_id=message.run_id, request_id=rid))
        elif isinstance(message, Answer):
            self.reply(registry.get(message.run_id, request_id=rid).answer(message))
        elif isinstance(message, Approve):
            self.reply(registry.get(message.run_id, request_id=rid).approve(message))
        elif isinstance(message, Correct):
            self.reply(registry.get(message.run_id, request_id=rid).correct(message))
        elif isinstance(message, Override | Continue):
            run = registry.get(message.run_id, request_id=rid)
            assert self._nursery is not None
            self._nursery.start_soon(self._decide, run, message)

    async def _decide(self, run: ServedRun, message: Override | Continue) -> None:
        agent = message.agent if isinstance(message, Override) else None
        accepted, error = await run.decide(agent)
        self.reply(
            Verdict(
                run_id=run.run_id,
                request_id=message.request_id,
                decision=message.type,
                agent=agent,
                accepted=accepted,
                error=error,
            )
        )

    def reply(self, message: ServerMessage) -> None:
        """Queue a reply; a client that leaves too many unread is dropped."""
        try:
            self._send_reply.send_nowait(encode_server(message))
        except trio.WouldBlock:
            self._expel(f"it left {REPLY_BUFFER} replies unread")

    async def _reply_pump(self) -> None:
        async for line in self._replies:
            lines = [line]
            while len(lines) < 64:
                try:
                    lines.append(self._replies.receive_nowait())
                except trio.WouldBlock:
                    break
            if not await self._send(lines):
                return

    # ------------------------------------------------------------------ watching

    def _subscribe(
        self, run: ServedRun, request_id: str | None, preamble: list[str] | None
    ) -> None:
        """Watch ``run``: with ``preamble`` (``run_accepted``) from now on; without, from a
        snapshot. A running run's snapshot is taken at its next frame boundary, one for
        every client subscribing in that interval (:meth:`RunFeed.join`); an ended run's
        now, followed by its ``result`` line. Either way the lines that follow fit it."""
        feed = run.feed
        settings = self.server.settings
        joining = preamble is None and not feed.finished
        watcher = (feed.join if joining else feed.watch)(
            limit=settings.client_buffer,
            on_drop=self._expel,
            name=f"serve {self.name}",
            write=self._write,
            encoding=self.encoding,
        )
        if preamble is None and not joining:
            watcher.snapshot = feed.capture()
        subscription = _Subscription(run, watcher, request_id, preamble)
        self.subscriptions[run.run_id] = subscription
        assert self._nursery is not None
        self._quiet = trio.Event() if self._quiet.is_set() else self._quiet
        self._nursery.start_soon(self._pump, subscription)

    async def _pump(self, subscription: _Subscription) -> None:
        """Send the run's lines to the client as they are published; see the module
        docstring. Ends after the run's ``result`` line, on ``unsubscribe``, or when the
        client is dropped or leaves."""
        settings = self.server.settings
        watcher = subscription.watcher
        try:
            if subscription.preamble is not None:
                if not await self._send(subscription.preamble):
                    return
            else:
                with subscription.waiting:
                    await watcher.admitted.wait()
                if subscription.stopped or watcher.snapshot is None:
                    return
                run, rid = subscription.run, subscription.request_id
                snapshot = run.snapshot_frame(rid, watcher.snapshot, self.encoding)
                if not await self._send_frames(snapshot):
                    return
                result = run.result_frame(self.encoding) if watcher.snapshot.ended else None
                if result is not None and not await self._send_frames(result):
                    return
            while not watcher.done and not subscription.stopped:
                subscription.waiting = trio.CancelScope()
                with subscription.waiting:
                    await watcher.wait()
                if subscription.stopped or watcher.dropped is not None or self._expelled:
                    return
                frames = watcher.take(settings.frame_bytes)
                if frames and not await self._send_frames(frames):
                    return
        finally:
            watcher.close()
            if self.subscriptions.get(subscription.run.run_id) is subscription:
                del self.subscriptions[subscription.run.run_id]
            if not self.subscriptions:
                self._quiet.set()

    async def _send(self, lines: list[str]) -> bool:
        """One frame; ``False`` if the connection is gone or the client was dropped."""
        if self._expelled is not None:
            return False
        try:
            await self.ws.send_message("\n".join(lines))
        except ConnectionClosed:
            return False
        return self._expelled is None

    async def _send_frames(self, frames: bytes) -> bool:
        """A run's frames, as the feed built them; ``False`` as :meth:`_send`."""
        if self._expelled is not None:
            return False
        try:
            sent = await send_frames(self._stream, frames, still_open=self._open)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return False
        return sent and self._expelled is None

    def _open(self) -> bool:
        return self.ws.closed is None

    def _write(self, frames: bytes) -> int | None:
        """A run's frames, written now if they can be without waiting (see
        :func:`~ui.serve.raw_frames.write_now`); ``None`` if not (the pump then sends them)."""
        if self._expelled is not None or self.ws.closed is not None:
            return None
        return write_now(self._stream, frames)

    def _expel(self, reason: str) -> None:
        """Drop this client (it reads too slowly): from the feed's scan or a full reply
        queue, synchronously; the closing happens in :meth:`_close_expelled`."""
        if self._expelled is not None or self._nursery is None:
            return
        self._expelled = reason
        for subscription in list(self.subscriptions.values()):
            subscription.stop()
        self._nursery.start_soon(self._close_expelled, reason)

    async def _close_expelled(self, reason: str) -> None:
        """Tell the client why and close, once its frame in flight is sent; if its socket
        takes nothing for ``shutdown_grace`` seconds, cut the connection."""
        assert self._nursery is not None
        frame = encode_server(ErrorFrame(code=ErrorCode.FELL_BEHIND, message=f"dropped: {reason}"))
        with trio.move_on_after(self.server.settings.shutdown_grace) as scope:
            await self._quiet.wait()
            try:
                await self.ws.send_message(frame)
                await self.ws.aclose(CloseCode.FELL_BEHIND, "fell behind")
            except ConnectionClosed:
                pass
        if scope.cancelled_caught:
            await trio.aclose_forcefully(self._stream)
        self._nursery.cancel_scope.cancel()


@asynccontextmanager
async def open_server(
    settings: ServeSettings,
    *,
    host: str,
    port: int,
    say: Callable[[str], None] = lambda line: None,
) -> AsyncIterator[Server]:
    """Listen on ``host:port`` (``port`` 0: any free port, see :attr:`Server.port`) until the
    block ends, then stop in order. Raises ``OSError`` if it cannot listen (the port is
    taken)."""
    listeners = await trio.open_tcp_listeners(port, host=host, backlog=BACKLOG)
    async with open_backends() as pool, trio.open_nursery() as runs, trio.open_nursery() as rest:
        registry = RunRegistry(settings, backends=pool, nursery=runs, say=say)
        server = Server(settings, registry, listeners, rest, say)
        rest.start_soon(server._listen)
        try:
            yield server
            await server.stop()
        finally:
            rest.cancel_scope.cancel()
            runs.cancel_scope.cancel()
