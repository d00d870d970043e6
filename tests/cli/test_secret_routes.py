"""No secret the config uses reaches anything ``conclave run`` writes, by any route: a run
tries each (tests/secret_routes.py: the sandbox's environment, a file holding the key, an
MCP server echoing it, a 401 quoting it) as the installed command, in every output format,
and every byte it wrote (stdout, stderr, the event log, the transcripts, every file in the
log directory) is searched for the secrets.

No ``autojump_clock``: real sockets, real processes, real time.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import trio
import yaml

from tests.cli.helpers import TASK, conclave_process
from tests.llm.loopback import open_loopback_server
from tests.secret_routes import (
    KEY,
    assert_every_route_was_tried,
    assert_no_file_holds_a_secret,
    assert_written_nowhere,
    refuse_with_the_key,
    require_tools,
    routes_config,
    secrets_environment,
)

RUN_LIMIT = 120.0


async def test_no_secret_reaches_any_output_or_file_by_any_route(tmp_path: Path) -> None:
    everything = require_tools()
    context = tmp_path / "context"
    context.mkdir()
    log_root = tmp_path / "logs"
    done: dict[str, subprocess.CompletedProcess[bytes]] = {}

    async with open_loopback_server() as server:
        server.handler = refuse_with_the_key
        config = tmp_path / "routes.yaml"
        data = routes_config(f"{server.url}/v1", context, everything)
        config.write_text(yaml.safe_dump(data), encoding="utf-8")

        async def run_as(output: str) -> None:
            done[output] = await conclave_process(
                "run", "--config", str(config), "--output-format", output, "--verbose",
                "--log-dir", str(log_root / output), TASK,
                cwd=tmp_path, limit=RUN_LIMIT, env={**os.environ, **secrets_environment()},
            )  # fmt: skip

        async with trio.open_nursery() as nursery:
            for output in ("text", "json", "stream-json"):
                nursery.start_soon(run_as, output)
        sent = [r.headers.get("authorization", "") for r in server.requests]

    assert all(run.returncode == 0 for run in done.values()), done["text"].stderr.decode()
    for output, run in done.items():
        assert_written_nowhere(run.stdout, f"the stdout of --output-format {output}")
        assert_written_nowhere(run.stderr, f"the stderr of --output-format {output}")
    written = assert_no_file_holds_a_secret(log_root)
    assert {p.name for p in written} >= {"events.jsonl", "transcripts.jsonl"}
    assert any(KEY in header for header in sent)  # the key was in use
    stream = [json.loads(line) for line in done["stream-json"].stdout.splitlines()]
    assert_every_route_was_tried(stream, kind="type")
