"""Approvals of a served run: a tool call the permission mode says must ask is an
``approval_requested`` line to the run's watchers; any client may decide it by its id
(``approve``: allow once, allow for the session, or deny with feedback the model reads), a
``verdict`` says whether the decision was taken, nobody deciding within ``decision_timeout``
denies it saying so, and a late joiner's snapshot holds the waiting call. A real server on
loopback, real websocket clients, scripted agents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conclave.config.schema import AgentConfig, ConclaveConfig, OrchestratorConfig
from conclave.config.schema.backends import ScriptedBackendConfig, ToolStep
from conclave.config.schema.permissions import PermissionMode, PermissionsConfig
from tests.serve.helpers import Client, connect, serving

FILES = ("a.txt", "b.txt")


def _config(mode: PermissionMode = PermissionMode.ACCEPT_EDITS) -> ConclaveConfig:
    """One agent writes two files and deletes them: in accept-edits, the deletes ask."""
    steps = [ToolStep(tool="write_file", arguments={"path": p, "content": "x"}) for p in FILES]
    steps += [ToolStep(tool="delete_file", arguments={"path": p}) for p in FILES]
    agent = AgentConfig(id="solo", backend=ScriptedBackendConfig(tool_steps=tuple(steps)))
    return ConclaveConfig(
        agents=(agent,),
        orchestrator=OrchestratorConfig(quiet_period=None, tools=True),
        permissions=PermissionsConfig(mode=mode),
    )


def _deletes(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        line
        for line in lines
        if line["type"] == "tool_call_finished" and line["tool"] == "delete_file"
    ]


def _decided(lines: list[dict[str, Any]]) -> list[str]:
    return [line["outcome"] for line in lines if line["type"] == "tool_approval_decided"]


async def _approve(client: Client, run_id: str, approval_id: str, **fields: Any) -> None:
    await client.send(type="approve", run_id=run_id, approval_id=approval_id, **fields)


async def test_the_waiting_call_is_sent_to_the_watchers_with_what_it_would_do(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path, config=_config()) as server, connect(server) as client:
        run_id = await client.start_run(agent_mode="single")
        asked = (await client.until("approval_requested"))[-1]
        await _approve(client, run_id, asked["approval_id"], decision="allow_session")
        await client.until("result")

    assert asked == {
        "type": "approval_requested",
        "run_id": run_id,
        "approval_id": "a1",
        "agent": "solo",
        "tool": "delete_file",
        "arguments": '{"path":"a.txt"}',
        "subject": "a.txt",
        "reason": "delete_file deletes a.txt (permission mode accept-edits)",
        "timeout": 300.0,
    }


async def test_any_client_may_deny_a_call_and_the_model_reads_its_feedback(
    tmp_path: Path,
) -> None:
    async with (
        serving(tmp_path, config=_config()) as server,
        connect(server) as starter,
        connect(server) as other,
    ):
        run_id = await starter.start_run(agent_mode="single")
        verdicts, lines = [], []
        for _ in FILES:
            lines += await starter.until("approval_requested")
            await _approve(
                other, run_id, lines[-1]["approval_id"], decision="deny", feedback="keep it"
            )
            verdicts.append((await other.until("verdict"))[-1])
        lines += await starter.until("result")

    assert [(v["accepted"], v["agent"], v["approval_id"]) for v in verdicts] == [
        (True, "solo", "a1"),
        (True, "solo", "a2"),
    ]
    assert [(d["refused"], d["error"]) for d in _deletes(lines)] == [
        (True, "the call to delete_file was refused: the user denied it: keep it")
    ] * 2
    assert _decided(lines) == ["denied", "denied"]
    assert lines[-1]["termination"] == "completed"


async def test_allowed_once_the_call_runs_and_the_next_one_asks_again(tmp_path: Path) -> None:
    async with serving(tmp_path, config=_config()) as server, connect(server) as client:
        run_id = await client.start_run(agent_mode="single")
        lines = []
        for _ in FILES:
            lines += await client.until("approval_requested")
            await _approve(client, run_id, lines[-1]["approval_id"], decision="allow_once")
        lines += await client.until("result")

    assert [d["ok"] for d in _deletes(lines)] == [True, True]
    assert _decided(lines) == ["allowed_once", "allowed_once"]


async def test_allowed_for_the_session_the_same_tool_asks_no_more(tmp_path: Path) -> None:
    async with serving(tmp_path, config=_config()) as server, connect(server) as client:
        run_id = await client.start_run(agent_mode="single")
        lines = await client.until("approval_requested")
        await _approve(client, run_id, lines[-1]["approval_id"], decision="allow_session")
        lines += await client.until("result")

    assert [line["type"] for line in lines].count("approval_requested") == 1
    assert [d["ok"] for d in _deletes(lines)] == [True, True]
    assert _decided(lines) == ["allowed_for_session"]


async def test_a_call_nobody_decides_is_denied_after_the_decision_timeout_saying_so(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path, config=_config()) as server, connect(server) as client:
        await client.start_run(agent_mode="single", decision_timeout=0.2)
        lines = await client.until("result")

    [first, _] = _deletes(lines)
    assert first["refused"] is True
    assert first["error"].startswith(
        "the call to delete_file was refused: nobody answered within 0.2 seconds"
    )
    assert _decided(lines) == ["denied", "denied"]
    assert lines[-1]["termination"] == "completed"


async def test_a_late_joiner_sees_the_waiting_call_in_its_snapshot(tmp_path: Path) -> None:
    async with serving(tmp_path, config=_config()) as server, connect(server) as client:
        run_id = await client.start_run(agent_mode="single")
        asked = (await client.until("approval_requested"))[-1]
        async with connect(server) as late:
            await late.send(type="subscribe", run_id=run_id)
            snapshot = await late.next()
            await _approve(late, run_id, asked["approval_id"], decision="allow_session")
            lines = await late.until("result")

    assert snapshot["approval"] == {k: v for k, v in asked.items() if k not in {"type", "run_id"}}
    assert lines[-1]["termination"] == "completed"


async def test_a_decision_about_a_call_not_waiting_is_refused_saying_why(tmp_path: Path) -> None:
    async with serving(tmp_path, config=_config()) as server, connect(server) as client:
        run_id = await client.start_run(agent_mode="single")
        asked = (await client.until("approval_requested"))[-1]
        await _approve(client, run_id, "a9", decision="allow_once")
        refused = (await client.until("verdict"))[-1]
        await _approve(client, run_id, asked["approval_id"], decision="allow_session")
        taken = (await client.until("verdict"))[-1]
        await _approve(client, run_id, asked["approval_id"], decision="deny")
        again = (await client.until("verdict"))[-1]
        await client.until("result")

    assert (refused["accepted"], refused["approval_id"]) == (False, "a9")
    assert refused["error"] == "approval 'a9' is not the open one ('a1')"
    assert taken["accepted"] is True
    assert again["accepted"] is False
    assert again["error"] in {
        "approval 'a1' was decided already",
        "no tool call waits for approval (approval 'a1' is not open)",
    }


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"decision": "maybe"}, "expected one of allow_once, allow_session, deny"),
        ({"decision": "allow_once", "feedback": "why"}, "feedback goes with decision deny"),
        ({}, "required field missing @ approve.decision"),
    ],
    ids=["unknown decision", "feedback with allow", "no decision"],
)
async def test_a_malformed_decision_is_a_bad_message_naming_what_is_wrong(
    tmp_path: Path, fields: dict[str, Any], said: str
) -> None:
    async with serving(tmp_path, config=_config()) as server, connect(server) as client:
        run_id = await client.start_run(agent_mode="single")
        asked = (await client.until("approval_requested"))[-1]
        await _approve(client, run_id, asked["approval_id"], request_id="r1", **fields)
        error = (await client.until("error"))[-1]
        await _approve(client, run_id, asked["approval_id"], decision="allow_session")
        await client.until("result")

    assert (error["code"], error["request_id"]) == ("bad_message", "r1")
    assert said in error["message"]


async def test_a_client_without_the_token_cannot_decide(tmp_path: Path) -> None:
    async with serving(tmp_path, config=_config()) as server, connect(server) as client:
        run_id = await client.start_run(agent_mode="single")
        asked = (await client.until("approval_requested"))[-1]
        async with connect(server, headers=[], welcome=False) as stranger:
            await _approve(stranger, run_id, asked["approval_id"], decision="allow_session")
            refused = await stranger.next()
        waiting = asked["approval_id"]
        await _approve(client, run_id, waiting, decision="deny", feedback="no")
        verdict = (await client.until("verdict"))[-1]
        lines = await client.until("approval_requested")
        await _approve(client, run_id, lines[-1]["approval_id"], decision="deny")
        lines += await client.until("result")

    assert (refused["type"], refused["code"]) == ("error", "unauthorized")
    assert verdict["accepted"] is True  # the stranger's decision was not taken
    assert _decided(lines) == ["denied", "denied"]
