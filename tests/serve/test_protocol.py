"""The protocol's typed messages: what a client may send, and what is refused and why."""

from __future__ import annotations

import json

import pytest

from conclave.config.modes import AgentMode, CollaborationMode
from conclave.ui.serve.protocol import (
    Answer,
    ApprovalDecision,
    Approve,
    Auth,
    Cancel,
    ClientMessage,
    Continue,
    Correct,
    ErrorCode,
    ErrorFrame,
    Override,
    ProtocolError,
    StartRun,
    Subscribe,
    Unsubscribe,
    client_types,
    decode_client,
    encode_client,
    encode_server,
)

EVERY_MESSAGE: list[ClientMessage] = [
    Auth(token="t" * 20, request_id="r1"),
    StartRun(
        task="a task",
        mode=CollaborationMode.PLAN,
        agent_mode=AgentMode.SINGLE,
        agent="agent-2",
        refinement=False,
        timeout=12.5,
        override_window=True,
        decision_timeout=None,
        after="run-1",
        watch=False,
        questions=True,
    ),
    Subscribe(run_id="run-1"),
    Unsubscribe(run_id="run-1"),
    Cancel(run_id="run-1"),
    Override(run_id="run-1", agent="agent-3"),
    Continue(run_id="run-1"),
    Answer(run_id="run-1", question_id="q1", value="keep", request_id="r2"),
    Approve(
        run_id="run-1",
        approval_id="a1",
        decision=ApprovalDecision.DENY,
        feedback="keep the file",
        request_id="r3",
    ),
    Correct(run_id="run-1", text="search only in src/utils", agent="agent-1"),
]


@pytest.mark.parametrize("message", EVERY_MESSAGE, ids=lambda m: m.type)
def test_every_client_message_round_trips_through_its_json(message: ClientMessage) -> None:
    assert decode_client(encode_client(message)) == message


def test_every_client_type_is_covered_above() -> None:
    assert sorted(m.type for m in EVERY_MESSAGE) == sorted(client_types())


def test_a_start_run_needs_only_its_task() -> None:
    assert decode_client('{"type": "start_run", "task": "x"}') == StartRun(task="x")


def refused(frame: str | bytes) -> ProtocolError:
    with pytest.raises(ProtocolError) as error:
        decode_client(frame)
    return error.value


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("refinement", "false", "expected true or false"),
        ("task", 5, "expected a string"),
        ("timeout", True, "expected a number"),
        ("mode", "zz", "expected one of default, plan, execute"),
        ("timeout", -1, "timeout must be a number of seconds > 0"),
        ("task", "  ", "task is empty"),
    ],
)
def test_a_wrong_field_is_refused_naming_it_never_coerced(
    field: str, value: object, expected: str
) -> None:
    message = {"type": "start_run", "task": "x", field: value}

    error = refused(json.dumps(message))

    assert error.code is ErrorCode.BAD_MESSAGE
    assert expected in error.message


def test_a_missing_field_is_named() -> None:
    error = refused('{"type": "override", "run_id": "r"}')

    assert error.message == "required field missing @ override.agent"


def test_an_unknown_field_is_named_and_the_request_id_kept() -> None:
    error = refused('{"type": "cancel", "run_id": "r", "bogus": 1, "request_id": "q7"}')

    assert "unknown field(s) bogus" in error.message
    assert error.request_id == "q7"


@pytest.mark.parametrize("frame", ['{"type": "launch"}', '{"task": "x"}', '{"type": 3}'])
def test_an_unknown_or_missing_type_lists_the_known_ones(frame: str) -> None:
    error = refused(frame)

    assert error.code is ErrorCode.UNKNOWN_TYPE
    assert "start_run, subscribe" in error.message


@pytest.mark.parametrize("frame", ["{not json", "[1, 2]", '"a string"', b"\xff\xfe", ""])
def test_a_frame_that_is_not_one_json_object_is_a_bad_frame(frame: str | bytes) -> None:
    assert refused(frame).code is ErrorCode.BAD_FRAME


def test_server_messages_start_with_their_type() -> None:
    line = encode_server(ErrorFrame(code=ErrorCode.BUSY, message="full", request_id="r"))

    assert line.startswith('{"type": "error", ')
    assert json.loads(line) == {
        "type": "error",
        "code": "busy",
        "message": "full",
        "request_id": "r",
    }


def test_a_server_line_never_holds_a_raw_line_break() -> None:
    line = encode_server(ErrorFrame(code=ErrorCode.BUSY, message="a\nb\u2028c"))

    assert "\n" not in line and "\u2028" not in line
    assert json.loads(line)["message"] == "a\nb\u2028c"
