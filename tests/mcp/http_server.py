"""A streamable-HTTP MCP server for the specs, written with the official SDK's server API
(``MCPServer``, served by uvicorn on asyncio: it runs as a process of its own).

``python tests/mcp/http_server.py --token T --log FILE``: listens on 127.0.0.1 at a port the
kernel picks, bound before it prints it (the first line of stdout), so a test that read the
port can connect at once. Every HTTP request's ``Authorization`` header is appended to
``FILE`` (one line each, ``-`` for none); a request without ``Bearer T`` is answered 401.

Tools: ``add`` (read-only), ``Get-Sum`` (a name with upper case and a hyphen, as MCP allows;
read-only) and ``remember`` (writes; not read-only).
"""

from __future__ import annotations

import argparse
import asyncio
import socket
from pathlib import Path
from typing import Any

import uvicorn
from mcp.server import MCPServer
from mcp_types import ToolAnnotations

READ_ONLY = ToolAnnotations(read_only_hint=True)


def build(token: str, log: Path) -> Any:
    """The server's ASGI app: the SDK's, behind the header check."""
    server = MCPServer("specs-http")
    notes: list[str] = []

    @server.tool(annotations=READ_ONLY, description="The sum of a and b.")
    def add(a: int, b: int) -> str:
        return str(a + b)

    @server.tool(name="Get-Sum", annotations=READ_ONLY, description="The sum of the numbers.")
    def get_sum(numbers: list[int]) -> str:
        return f"sum={sum(numbers)}"

    @server.tool(description="Remember a note; answers how many are remembered.")
    def remember(note: str) -> str:
        notes.append(note)
        return f"{len(notes)} notes"

    app = server.streamable_http_app(host="127.0.0.1")
    expected = f"Bearer {token}".encode()

    async def checked(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)  # lifespan: the SDK's session manager
            return
        seen = dict(scope["headers"]).get(b"authorization")
        with log.open("a", encoding="utf-8") as out:
            out.write((seen.decode() if seen is not None else "-") + "\n")
        if seen != expected:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"wrong or missing token"})
            return
        await app(scope, receive, send)

    return checked


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--token", required=True)
    parser.add_argument("--log", required=True, type=Path)
    args = parser.parse_args()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    print(listener.getsockname()[1], flush=True)
    config = uvicorn.Config(build(args.token, args.log), log_level="warning", lifespan="on")
    asyncio.run(uvicorn.Server(config).serve(sockets=[listener]))


if __name__ == "__main__":
    main()
