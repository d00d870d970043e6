"""The REPL starts its MCP servers once for the session and lends them to every turn: a
second turn uses the same server process, and each turn's log says which servers it had."""

from __future__ import annotations

import json
from pathlib import Path

import attrs

from conclave.actors.mcp.events import McpServerReady
from conclave.config.schema import default_config
from tests.mcp.conftest import stdio
from tests.mcp.test_servers import server_pids
from tests.repl.harness import Session, play


def test_two_turns_of_a_repl_session_share_one_mcp_server_process(
    fs_server: str, files: Path, tmp_path: Path
) -> None:
    starts = tmp_path / "starts.txt"
    counted = tmp_path / "counted-fs-server"
    counted.write_text(f'#!/bin/sh\necho started >> "{starts}"\nexec "{fs_server}" "$@"\n')
    counted.chmod(0o755)
    # Trusted: the wrapper counts its starts in a file no grant would let it write.
    server = stdio("fs", str(counted), str(files), trust=True)
    config = attrs.evolve(default_config(2), mcp_servers=(server,))
    pids: list[list[int]] = []

    async def scenario(session: Session) -> None:
        for task in ("First task", "Second task"):
            await session.result_of(task)
            pids.append(server_pids(str(files)))

    play(scenario, tmp_path, conclave=config)

    assert starts.read_text().splitlines() == ["started"]  # once, for both turns
    assert len(pids[0]) == 1
    assert pids[1] == pids[0]
    logs = sorted((tmp_path / "runs").glob("*/events.jsonl"))
    assert len(logs) == 2
    for log in logs:
        ready = [
            json.loads(line)
            for line in log.read_text().splitlines()
            if json.loads(line).get("kind") == McpServerReady.kind
        ]
        assert [(r["server"], r["incarnation"]) for r in ready] == [("fs", 1)]
    assert server_pids(str(files)) == []  # stopped with the session
