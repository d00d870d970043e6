"""One connection to one MCP server, through the official SDK (``mcp``, on anyio over trio).

:func:`open_connection` starts a stdio server (or reaches a streamable-HTTP one), makes the
MCP handshake and lists the server's tools, within the config's ``startup_timeout``; the
connection lives as long as the ``async with`` block, and leaving it stops a stdio server
(stdin closed, then SIGTERM and SIGKILL to its process group: the SDK's bounded, shielded
shutdown). It must be entered and left in one task (the SDK's task groups require it).

A stdio server's environment is exactly ``PATH`` and the config's ``env``: the SDK would add
``HOME``, ``USER`` and others, so the command runs through ``env -i``. Unless the config
trusts it, it runs confined (:mod:`actors.mcp.confine`) with the grants it is given. Its
stderr is read into a bounded buffer (the last :data:`STDERR_KEEP` bytes), redacted when
shown.

``lost`` is set when the server goes away: its stdout closed (a stdio server exited), or a
call failed because the connection is gone (:meth:`Connection.mark_lost`).

A streamable-HTTP server that answers the start with an HTTP error (401 for a wrong token,
404 for a wrong path) fails with :class:`HttpRefused`, naming the status: the SDK reports
only "Server returned an error response".
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import shutil
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

import attrs
import trio

from conclave.actors.llm.redaction import redact
from conclave.actors.mcp.confine import ServerGrants
from conclave.config.schema.mcp import McpServerConfig, StdioMcpServer

__all__ = [
    "STDERR_KEEP",
    "Connection",
    "HttpRefused",
    "ListedTool",
    "StderrTail",
    "open_connection",
]

STDERR_KEEP = 8192
"""Bytes of a server's stderr kept for messages (the last ones)."""


@attrs.frozen(kw_only=True)
class ListedTool:
    """A tool as the server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any] = attrs.field(hash=False)
    read_only_hint: bool | None


class StderrTail:
    """The last :data:`STDERR_KEEP` bytes a server wrote to stderr."""

    def __init__(self) -> None:
        self._data = bytearray()

    def feed(self, chunk: bytes) -> None:
        self._data += chunk
        if len(self._data) > STDERR_KEEP:
            del self._data[: len(self._data) - STDERR_KEEP]

    def text(self, secrets: Iterable[str] = ()) -> str:
        """What the server wrote, redacted (keys in use, the config's env and header values,
        anything key-shaped)."""
        return redact(self._data.decode("utf-8", "replace").strip(), secrets)


class _WatchedStream:
    """The SDK's read stream, setting ``lost`` when it ends (the server's stdout closed)."""

    def __init__(self, inner: Any, lost: trio.Event) -> None:
        self._inner = inner
        self._lost = lost

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except BaseException as exc:
            if not isinstance(exc, trio.Cancelled):
                self._lost.set()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _WatchedStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._inner.__anext__()
        except StopAsyncIteration:
            self._lost.set()
            raise
        except Exception:
            self._lost.set()
            raise

    async def __aenter__(self) -> _WatchedStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class Connection:
    """A live session with one server: its tools, its client, and whether it is gone."""

    def __init__(self, client: Any, tools: tuple[ListedTool, ...], lost: trio.Event) -> None:
        self.client = client
        """The SDK's ``mcp.Client``; calls may come from any task."""
        self.tools = tools
        self.lost = lost

    def mark_lost(self) -> None:
        """A call found the connection gone: the server's actor reconnects."""
        self.lost.set()


class HttpRefused(Exception):
    """A streamable-HTTP server answered the start with an HTTP error; the message says
    which and what to check."""


class _HttpErrors:
    """The first HTTP error status a server answered with, from the client's response hook."""

    def __init__(self) -> None:
        self.status: int | None = None
        self.reason = ""

    async def hook(self, response: Any) -> None:
        if response.status_code >= 400 and self.status is None:
            self.status = response.status_code
            self.reason = response.reason_phrase

    def refused(self, url: str) -> HttpRefused:
        what = f"the server at {url} answered HTTP {self.status} {self.reason}".rstrip()
        if self.status in (401, 403):
            return HttpRefused(f"{what}: check its 'headers' (a missing or wrong token?)")
        if self.status in (404, 405):
            return HttpRefused(f"{what}: check the path in 'url' (servers often serve /mcp)")
        return HttpRefused(what)


def secrets_of(config: McpServerConfig) -> tuple[str, ...]:
    """Values a message about ``config`` must not show: its env and header values."""
    if isinstance(config, StdioMcpServer):
        return tuple(config.env.values())
    return tuple(config.headers.values())


@contextlib.asynccontextmanager
async def open_connection(
    config: McpServerConfig, stderr: StderrTail, grants: ServerGrants
) -> AsyncIterator[Connection]:
    """Connect to the server and list its tools within ``config.startup_timeout``; raises
    what went wrong (``TooSlowError`` for the timeout, ``OSError`` for a command that cannot
    run, :class:`~actors.mcp.confine.NotConfinable`, the SDK's ``MCPError`` for a refused
    handshake). A stdio server sees what ``grants`` shows it. See the module docstring."""
    from mcp import Client

    lost = trio.Event()
    http = _HttpErrors()
    started = False
    # The deadline's scope encloses the whole connection (a scope left while the SDK's task
    # groups inside it are still open would corrupt trio's scope stack); once started, the
    # deadline is lifted.
    with trio.CancelScope(deadline=trio.current_time() + config.startup_timeout) as startup:
        try:
            async with (
                _transport(config, stderr, http, grants) as transport,
                Client(_WatchedTransport(transport, lost), cache=None) as client,
            ):
                tools = await _list_tools(client)
                startup.deadline = math.inf
                started = True
                yield Connection(client, tools, lost)
        except Exception as exc:
            if started or http.status is None or isinstance(config, StdioMcpServer):
                raise
            raise http.refused(config.url) from exc
    if startup.cancelled_caught:
        raise trio.TooSlowError(f"not started within {config.startup_timeout:g} s")


class _WatchedTransport:
    """An SDK transport (an async context manager of two streams), its read stream watched."""

    def __init__(self, streams: tuple[Any, Any], lost: trio.Event) -> None:
        self._streams = streams
        self._lost = lost

    async def __aenter__(self) -> tuple[Any, Any]:
        read, write = self._streams
        return _WatchedStream(read, self._lost), write

    async def __aexit__(self, *exc: object) -> None:
        return None


async def _list_tools(client: Any) -> tuple[ListedTool, ...]:
    listed: list[ListedTool] = []
    cursor: str | None = None
    for _ in range(100):  # a server whose cursor never ends cannot hang the start
        page = await client.list_tools(cursor=cursor)
        for tool in page.tools:
            hint = tool.annotations.read_only_hint if tool.annotations is not None else None
            listed.append(
                ListedTool(
                    name=tool.name,
                    description=tool.description or tool.title or tool.name,
                    input_schema=dict(tool.input_schema),
                    read_only_hint=hint,
                )
            )
        cursor = page.next_cursor
        if cursor is None:
            break
    return tuple(listed)


@contextlib.asynccontextmanager
async def _transport(
    config: McpServerConfig, stderr: StderrTail, errors: _HttpErrors, grants: ServerGrants
) -> AsyncIterator[tuple[Any, Any]]:
    if isinstance(config, StdioMcpServer):
        async with _stdio(config, stderr, grants) as streams:
            yield streams
        return
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    client = create_mcp_http_client(headers=dict(config.headers))
    client.event_hooks = {"request": [], "response": [errors.hook]}
    async with client as http, streamable_http_client(config.url, http_client=http) as streams:
        yield streams


@contextlib.asynccontextmanager
async def _stdio(
    config: StdioMcpServer, stderr: StderrTail, grants: ServerGrants
) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio transport, the server's environment exactly PATH and ``env``, confined
    unless trusted, its stderr read into ``stderr`` until the process closes it."""
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from conclave.actors.mcp.confine import confined_argv

    env = {"PATH": os.environ.get("PATH", os.defpath), **config.env}
    program = _check_command(config, env["PATH"])
    launcher = shutil.which("env") or "/usr/bin/env"
    argv = [launcher, "-i", *(f"{k}={v}" for k, v in env.items()), program, *config.args]
    if not config.trust:
        confine = functools.partial(
            confined_argv, config, grants, argv, program=Path(program), search_path=env["PATH"]
        )
        argv = await trio.to_thread.run_sync(confine)
    params = StdioServerParameters(
        command=argv[0], args=argv[1:], cwd=str(config.cwd) if config.cwd is not None else None
    )
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    errlog = os.fdopen(write_fd, "w")
    done = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_read_stderr, read_fd, stderr, done)
        try:
            async with stdio_client(params, errlog=errlog) as streams:
                errlog.close()  # the server holds its own copy; EOF comes when it exits
                yield streams
        finally:
            errlog.close()
            # The server is stopped by now: what it wrote last (why it failed) is still to
            # be read. A process it left behind may hold stderr open: wait a bounded time.
            with trio.move_on_after(_STDERR_DRAIN_S, shield=True):
                await done.wait()
            nursery.cancel_scope.cancel()


_STDERR_DRAIN_S = 1.0


def _check_command(config: StdioMcpServer, path: str) -> str:
    """The command's absolute path; refuses one that cannot run, saying so (``env`` would
    only say it on stderr)."""
    command = config.command
    if "/" in command and config.cwd is not None and not os.path.isabs(command):
        command = os.path.join(config.cwd, command)
    found = shutil.which(command, path=path)
    if found is None:
        raise FileNotFoundError(
            f"the command {config.command!r} is not found: not on PATH, nor an executable "
            "file; install the server or fix 'command'"
        )
    return os.path.abspath(found)


async def _read_stderr(fd: int, tail: StderrTail, done: trio.Event) -> None:
    """Until the server closes its stderr (it exited); cancelled with the connection."""
    try:
        async with trio.lowlevel.FdStream(fd) as stream:
            while chunk := await stream.receive_some(4096):
                tail.feed(chunk)
    finally:
        done.set()
