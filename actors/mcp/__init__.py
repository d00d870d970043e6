"""MCP servers and their tools (the official ``mcp`` SDK, on anyio over trio).

``connection`` (one session with one server: start, handshake, tool list, stderr),
``server`` (each server a supervised actor of the run: started with it, restarted on a crash
within bounds, stopped after the agents), ``tools`` (a server's tools as the executor's
``ToolSpec``s, ``mcp__<server>__<tool>``), and ``events`` (``McpServerReady``,
``McpServerFailed``).
"""
