"""MCP servers and their tools (the official ``mcp`` SDK, on anyio over trio).

``connection`` (one session with one server: start, handshake, tool list, stderr),
``server`` (each server a supervised actor of the run: started with it, restarted on a crash
within bounds, stopped after the agents), ``session`` (servers that outlive runs, started
once by a REPL session and lent to each run), ``tools`` (a server's tools as the executor's
``ToolSpec``s, ``mcp__<server>__<tool>``), and ``events`` (``McpServerReady``,
``McpServerFailed``).
"""
