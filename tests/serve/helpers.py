"""A real ``conclave serve`` server in the test's trio run, and real websocket clients of it
(trio-websocket's own client) over loopback. Runs use scripted agents: no network."""

from __future__ import annotations

import json
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio
from trio_websocket import CloseReason, ConnectionClosed, WebSocketConnection, open_websocket

from conclave.config.resolver import ResolvedConfig
from conclave.config.schema import AgentConfig, ConclaveConfig, ScriptedBackendConfig
from conclave.config.schema.orchestrator import OrchestratorConfig
from conclave.ui.serve.runs import ServeSettings
from conclave.ui.serve.server import Server, open_server

TOKEN = "test-token-0123456789abcdef"
TASK = "Name three uses of a paperclip"
BIG = 2**24
"""Clients accept frames this large: a result line of a big run is long."""


def scripted_config(agents: int = 3, latency: float = 0.0, **orchestrator: Any) -> ConclaveConfig:
    return ConclaveConfig(
        agents=tuple(
            AgentConfig(
                id=f"agent-{i}",
                backend=ScriptedBackendConfig(seed=i, latency=latency, jitter=0.0),
            )
            for i in range(1, agents + 1)
        ),
        orchestrator=OrchestratorConfig(quiet_period=None, **orchestrator),
    )


def settings(
    tmp_path: Path, *, config: ConclaveConfig | None = None, **changes: Any
) -> ServeSettings:
    resolved = ResolvedConfig(base=config or scripted_config())
    base = ServeSettings(resolved=resolved, token=TOKEN, log_root=tmp_path / "runs")
    return attrs.evolve(base, **changes)


@asynccontextmanager
async def serving(
    tmp_path: Path, *, log: list[str] | None = None, **changes: Any
) -> AsyncIterator[Server]:
    """A server on a free loopback port; ``log`` collects the lines it says."""
    say = log.append if log is not None else lambda line: None
    async with open_server(
        settings(tmp_path, **changes), host="127.0.0.1", port=0, say=say
    ) as server:
        yield server


def bearer(token: str = TOKEN) -> list[tuple[bytes, bytes]]:
    return [(b"authorization", f"Bearer {token}".encode())]


class Client:
    """A websocket client that reads the server's frames as lines of JSON: a binary frame
    (a client that proposed ``conclave.v1.zlib``) is the zlib data of its text."""

    def __init__(self, ws: WebSocketConnection) -> None:
        self.ws = ws
        self._pending: list[dict[str, Any]] = []
        self.binary: list[list[str]] = []
        """The ``type`` of each line of each binary frame received, frame by frame."""
        self.text: list[list[str]] = []
        """The same for the text frames."""

    async def send(self, **message: Any) -> None:
        await self.ws.send_message(json.dumps(message))

    async def next(self) -> dict[str, Any]:
        """The next line from the server, whatever its type."""
        while not self._pending:
            frame = await self.ws.get_message()
            text = zlib.decompress(frame).decode("utf-8") if isinstance(frame, bytes) else frame
            self._pending = [json.loads(line) for line in text.split("\n")]
            kinds = self.binary if isinstance(frame, bytes) else self.text
            kinds.append([line["type"] for line in self._pending])
        return self._pending.pop(0)

    async def until(self, kind: str) -> list[dict[str, Any]]:
        """Every line up to and including the first of type ``kind``."""
        lines = []
        while True:
            line = await self.next()
            lines.append(line)
            if line["type"] == kind:
                return lines

    async def start_run(self, **options: Any) -> str:
        """Start a run (watched), and return its id from ``run_accepted``."""
        await self.send(type="start_run", task=TASK, **options)
        accepted = await self.next()
        assert accepted["type"] == "run_accepted", accepted
        run_id: str = accepted["run_id"]
        return run_id


@asynccontextmanager
async def connect(
    server: Server,
    *,
    headers: list[tuple[bytes, bytes]] | None = None,
    subprotocols: list[str] | None = None,
    welcome: bool = True,
) -> AsyncIterator[Client]:
    """A client with the server's token in its header (unless ``headers`` says otherwise),
    past the ``welcome`` frame (unless ``welcome`` is false)."""
    async with open_websocket(
        "127.0.0.1",
        server.port,
        "/",
        use_ssl=False,
        extra_headers=bearer() if headers is None else headers,
        subprotocols=subprotocols,
        max_message_size=BIG,
    ) as ws:
        client = Client(ws)
        if welcome:
            first = await client.next()
            assert first["type"] == "welcome", first
        yield client


async def http_get(port: int, path: str) -> tuple[int, bytes]:
    """A plain HTTP/1.1 GET on loopback: the status and the body."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        data = b""
        while chunk := await stream.receive_some(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body


def events_of(log_dir: str | Path) -> list[dict[str, Any]]:
    path = Path(log_dir) / "events.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def code_of_reason(reason: CloseReason | None) -> int | None:
    return reason.code if reason is not None else None


def code_of(closed: ConnectionClosed) -> int | None:
    """The close code the server sent (``None``: the connection ended without one)."""
    return code_of_reason(closed.reason)
