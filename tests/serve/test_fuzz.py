"""The protocol under fuzzing (hypothesis): frames of every shape, size and encoding, before
and after authentication, and raw bytes where a request head belongs.

``decode_client`` answers any frame with a message or a :class:`ProtocolError`, nothing else;
a live server answers any sequence of frames with replies, ``error`` frames or a documented
close code (never 1011, an internal error), and keeps serving its other clients and runs.
These run in CI with the rest of the suite (the live ones with few examples: each starts a
server and a run on real loopback sockets).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trio_websocket import ConnectionClosed

from conclave.ui.serve.protocol import (
    MAX_DECODER_DEPTH,
    CloseCode,
    ProtocolError,
    client_types,
    decode_client,
)
from conclave.ui.serve.server import MAX_CLIENT_MESSAGE
from tests.serve.helpers import TOKEN, Client, code_of, connect, serving
from tests.serve.test_hostile import (
    SLOW_RUN,
    assert_still_serving,
    exchange,
    unexpected,
    watched_run,
)

FIELDS = (
    "request_id",
    "token",
    "task",
    "mode",
    "agent_mode",
    "agent",
    "refinement",
    "timeout",
    "override_window",
    "decision_timeout",
    "after",
    "watch",
    "run_id",
)
"""Every field some client message has: fuzzed messages mix them across types."""

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
    | st.sampled_from(["default", "plan", "multi", "single", "agent-1", TOKEN, "", " "])
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
messages = st.fixed_dictionaries(
    {"type": st.sampled_from([*client_types(), "launch", ""]) | st.text(max_size=12)},
    optional={field: json_values for field in FIELDS} | {f"x{i}": json_values for i in range(2)},
)


@st.composite
def nested(draw: st.DrawFn) -> str:
    """Arrays or objects nested up to far past the decoder's limit, possibly unbalanced."""
    levels = draw(st.sampled_from([1, 2, MAX_DECODER_DEPTH - 1, MAX_DECODER_DEPTH, 50_000]))
    opening, closing = draw(st.sampled_from([("[", "]"), ('{"a": ', "}")]))
    body = opening * levels + draw(st.sampled_from(["1", "", '"x"'])) + closing * levels
    cut = draw(st.integers(0, 3))
    return body[: len(body) - cut] if cut else body


@st.composite
def sized(draw: st.DrawFn) -> str:
    """A start_run whose task makes the frame about as large as ``MAX_CLIENT_MESSAGE``, just
    under it or just over it."""
    size = MAX_CLIENT_MESSAGE + draw(st.sampled_from([-64, 1, 4096]))
    return json.dumps({"type": "start_run", "task": "x" * size})[:size]


def as_json(value: Any) -> str:
    return json.dumps(value, allow_nan=False)


literals = st.sampled_from(
    [
        '{"type": "start_run", "task": "x", "timeout": NaN}',
        '{"type": "start_run", "task": "x", "timeout": Infinity}',
        '{"type": "start_run", "task": "x", "timeout": 1e999}',
        '{"type": "start_run", "task": "x", "timeout": ' + "9" * 5000 + "}",
        '{"type": "start_run", "task": "\\ud800"}',
        '{"type": "auth", "type": "cancel", "run_id": "r"}',
        '{"type": "cancel", "run_id": "r"}\n{"type": "cancel", "run_id": "s"}',
    ]
)
text_frames = (
    literals
    | messages.map(as_json)
    | json_values.map(as_json)
    | st.text(max_size=200)
    | nested()
    | messages.map(as_json).map(lambda frame: frame[: len(frame) // 2])
)
binary_frames = (
    text_frames.map(lambda frame: frame.encode("utf-8")) | st.binary(max_size=200)
).map(bytes)
frames = text_frames | binary_frames


@settings(max_examples=500, deadline=None)
@given(frames)
def test_decode_client_answers_any_frame_with_a_message_or_a_protocol_error(
    frame: str | bytes,
) -> None:
    try:
        decode_client(frame)
    except ProtocolError as refused:
        assert refused.message
        json.dumps(refused.message)  # an error frame can carry it


ALLOWED_CLOSES = {
    None,  # still open
    1000,
    1009,  # MESSAGE_TOO_BIG: a frame past MAX_CLIENT_MESSAGE
    CloseCode.UNAUTHORIZED,
}


async def _throw(client: Client, sent: list[str | bytes]) -> int | None:
    """Send each frame, then read what comes back until the server goes quiet or closes;
    every line it sends is JSON with a type. Returns the close code (``None``: open)."""
    try:
        for frame in sent:
            await client.ws.send_message(frame)
        with trio.move_on_after(0.5):
            while True:
                line = await client.next()
                assert isinstance(line.get("type"), str), line
    except ConnectionClosed as closed:
        return code_of(closed)
    return None


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    authenticated=st.booleans(),
    sent=st.lists(frames | sized(), min_size=1, max_size=6),
)
async def test_a_live_server_survives_any_frames_before_or_after_auth(
    authenticated: bool, sent: list[str | bytes]
) -> None:
    log: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        async with (
            serving(Path(scratch), config=SLOW_RUN, log=log) as server,
            watched_run(server) as watcher,
            connect(server, headers=None if authenticated else [], welcome=authenticated) as fuzz,
        ):
            code = await _throw(fuzz, sent)
            await assert_still_serving(server, watcher)

    assert code in ALLOWED_CLOSES
    assert unexpected(log) == []


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    head=st.binary(max_size=300)
    | st.text(max_size=300).map(lambda text: f"GET /{text} HTTP/1.1\r\n\r\n".encode())
    | st.sampled_from([b"\r\n\r\n", b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 5000 + b"\r\n"])
)
async def test_any_bytes_where_a_request_head_belongs_leave_the_server_serving(
    head: bytes,
) -> None:
    log: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        async with (
            serving(Path(scratch), config=SLOW_RUN, log=log) as server,
            watched_run(server) as watcher,
        ):
            with trio.move_on_after(0.3):  # a partial head waits for more: give up
                await exchange(server.port, head)
            await assert_still_serving(server, watcher)

    assert unexpected(log) == []
