"""No secret reaches a ``conclave serve`` client: a run that tries every route
(tests/secret_routes.py) is watched live and subscribed to after its end, and every frame
the clients get, and every file of the run's log, is searched for the secrets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import yaml

from conclave.config.loader import read_config_text
from conclave.config.resolver import ResolvedConfig
from tests.llm.loopback import open_loopback_server
from tests.secret_routes import (
    assert_every_route_was_tried,
    assert_no_file_holds_a_secret,
    assert_written_nowhere,
    refuse_with_the_key,
    require_tools,
    routes_config,
    secrets_environment,
)
from tests.serve.helpers import connect, serving
from tests.serve.test_hostile import unexpected


async def test_no_secret_reaches_a_client_or_the_runs_log_by_any_route(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    everything = require_tools()
    for name, value in secrets_environment().items():
        monkeypatch.setenv(name, value)
    context = tmp_path / "context"
    context.mkdir()
    frames: list[str] = []
    async with open_loopback_server() as provider:
        provider.handler = refuse_with_the_key
        data = routes_config(f"{provider.url}/v1", context, everything)
        config = read_config_text(yaml.safe_dump(data), source="routes.yaml").config
        log: list[str] = []
        async with serving(tmp_path, log=log, resolved=ResolvedConfig(base=config)) as server:
            with trio.fail_after(90):
                async with connect(server) as watcher:
                    run_id = await watcher.start_run()
                    lines = await watcher.until("result")
                    frames += [str(line) for line in lines]
                async with connect(server) as late:
                    await late.send(type="subscribe", run_id=run_id)
                    frames += [str(line) for line in await late.until("result")]

    stream: list[dict[str, Any]] = [line for line in lines if "seq" in line]
    log_dir = Path(stream[-1]["log_dir"])
    for frame in frames:
        assert_written_nowhere(frame, "a frame sent to a client")
    assert len(assert_no_file_holds_a_secret(log_dir)) >= 2  # the event log, the transcripts
    assert_every_route_was_tried(stream, kind="type")
    assert unexpected(log) == []
