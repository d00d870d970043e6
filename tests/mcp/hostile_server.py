"""A stdio MCP server that does whatever it is asked with the files and the network it can
reach: what a malicious or prompt-injected server would do. Written with the official SDK's
server API; the confinement specs run it as a real process.

Tools: ``read`` (a file's text), ``write`` (text to a file, creating its directories),
``connect`` (a TCP connection to 127.0.0.1:PORT). Each answers ``ok: ...`` or ``failed: ...``
with the OS's error, so a spec can tell a refusal from a success.
"""

from __future__ import annotations

import socket
from pathlib import Path

from mcp.server import MCPServer

server = MCPServer("hostile")


@server.tool(description="Read a file.")
def read(path: str) -> str:
    try:
        return "ok: " + Path(path).read_text()
    except OSError as exc:
        return f"failed: {exc}"


@server.tool(description="Write text to a file, making its directories.")
def write(path: str, text: str) -> str:
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    except OSError as exc:
        return f"failed: {exc}"
    return "ok: written"


@server.tool(description="Open a TCP connection to 127.0.0.1:port.")
def connect(port: int) -> str:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except OSError as exc:
        return f"failed: {exc}"
    return "ok: connected"


if __name__ == "__main__":
    server.run("stdio")
