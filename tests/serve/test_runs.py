"""Runs through the websocket: started, watched by many, joined late, steered, outliving
their clients, and never slowed or broken by one."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any, TypeVar

import trio
from trio.testing import wait_all_tasks_blocked
from trio_websocket import ConnectionClosed
from wsproto import ConnectionType, WSConnection
from wsproto.events import CloseConnection, Event, Request, TextMessage

from conclave.actors.events import DomainEvent
from conclave.actors.events.view import RunView
from conclave.runtime import converter
from conclave.runtime.eventlog import read_event_log
from conclave.runtime.system import ActorSystem
from conclave.ui.serve.protocol import CloseCode, StartRun
from tests.serve.helpers import (
    TASK,
    bearer,
    code_of_reason,
    connect,
    events_of,
    http_get,
    scripted_config,
    serving,
)

COMMON = ["type", "run_id", "seq", "t", "time"]
"""Every stream-json line starts with these fields, in this order (docs/stream-json.md)."""


def events(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stream-json lines among ``lines`` (protocol lines carry no ``seq``)."""
    return [line for line in lines if "seq" in line]


async def test_a_started_run_streams_run_started_to_result_in_the_stream_json_schema(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path) as server, connect(server) as client:
        run_id = await client.start_run()
        lines = await client.until("result")

    stream = events(lines)
    assert stream[0]["type"] == "run_started"
    assert stream[-2]["type"] == "run_ended"
    assert stream[-1]["type"] == "result"
    assert [line["seq"] for line in stream] == list(range(len(stream)))
    assert all(list(line)[:5] == COMMON for line in stream)
    assert {line["run_id"] for line in stream} == {run_id}
    assert stream[-1]["termination"] == "completed"


async def test_every_event_of_the_log_reaches_the_client_with_the_same_fields(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path) as server, connect(server) as client:
        await client.start_run()
        stream = events(await client.until("result"))

    logged = [e for e in events_of(stream[-1]["log_dir"]) if e["kind"] == stream[1]["type"]]
    sent = [line for line in stream if line["type"] == stream[1]["type"]]
    strip = {"type", "run_id", "seq", "t", "time"}
    assert [{k: v for k, v in line.items() if k not in strip} for line in sent] == [
        {k: v for k, v in event.items() if k not in ("kind", "at")} for event in logged
    ]


async def test_many_concurrent_clients_watching_one_run_get_the_same_lines(
    tmp_path: Path,
) -> None:
    clients = 40
    got: list[list[dict[str, Any]]] = []
    async with (
        serving(tmp_path, config=scripted_config(5, latency=0.05)) as server,
        connect(server) as starter,
    ):
        await starter.send(type="start_run", task=TASK, watch=False)
        run_id = (await starter.next())["run_id"]

        async def watch() -> None:
            async with connect(server) as client:
                await client.send(type="subscribe", run_id=run_id)
                got.append(await client.until("result"))

        async with trio.open_nursery() as nursery:
            for _ in range(clients):
                nursery.start_soon(watch)

    assert len(got) == clients
    results = [lines[-1] for lines in got]
    assert all(result == results[0] for result in results)
    assert all(lines[0]["type"] == "snapshot" for lines in got)
    for lines in got:  # each client's events follow its snapshot without a gap
        seqs = [line["seq"] for line in events(lines)]
        assert seqs == list(range(lines[0]["next_seq"], lines[0]["next_seq"] + len(seqs)))


async def test_a_late_joiner_gets_a_snapshot_that_the_following_events_continue(
    tmp_path: Path,
) -> None:
    async with (
        serving(tmp_path, config=scripted_config(4, latency=0.05)) as server,
        connect(server) as starter,
    ):
        run_id = await starter.start_run()
        await starter.until("answer_added")
        async with connect(server) as late:
            await late.send(type="subscribe", run_id=run_id)
            snapshot = await late.next()
            rest = events(await late.until("result"))

    assert snapshot["type"] == "snapshot"
    assert snapshot["next_seq"] == rest[0]["seq"] > 1
    assert snapshot["run_started"]["task"] == TASK
    # The snapshot's view is the view of the log's first ``next_seq`` domain events (the
    # stream's lines 0 .. next_seq - 1), times aside (the snapshot gives them as ``t``).
    logged = read_event_log(Path(rest[-1]["log_dir"]) / "events.jsonl").events
    domain = [event for event in logged if isinstance(event, DomainEvent)]
    expected = converter.unstructure(RunView.from_events(domain[: snapshot["next_seq"]]))
    assert without_times(snapshot["view"]) == without_times(expected)
    assert snapshot["view"]["answers"]


def without_times(view: dict[str, Any]) -> dict[str, Any]:
    times = ("started_at", "now", "stopped_at")
    agents = {
        name: {k: v for k, v in agent.items() if k not in times}
        for name, agent in view["agents"].items()
    }
    return {**{k: v for k, v in view.items() if k not in times}, "agents": agents}


async def test_a_subscriber_after_the_end_gets_the_snapshot_and_the_result(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path) as server, connect(server) as client:
        run_id = await client.start_run()
        await client.until("result")
        await client.send(type="subscribe", run_id=run_id)
        snapshot = await client.next()
        result = await client.next()

    assert snapshot["ended"] is True
    assert snapshot["view"]["phase"] == "ended"
    assert result["type"] == "result"
    assert result["termination"] == "completed"


async def test_a_client_that_disconnects_does_not_stop_its_run(tmp_path: Path) -> None:
    async with (
        serving(tmp_path, config=scripted_config(3, latency=0.1)) as server,
        connect(server) as starter,
    ):
        run_id = await starter.start_run()
        async with connect(server) as watcher:
            await watcher.send(type="subscribe", run_id=run_id)
            result = (await watcher.until("result"))[-1]

    assert result["termination"] == "completed"
    assert result["final_answer"]


async def test_a_slow_client_is_dropped_and_the_run_goes_on(tmp_path: Path) -> None:
    config = scripted_config(300, latency=0.0, visibility="ring")
    async with (
        serving(tmp_path, config=config, client_buffer=400, shutdown_grace=30) as server,
        connect(server) as slow,
        connect(server) as other,
    ):
        # ``slow`` starts the run (so it watches from its first line) and reads nothing
        # more until the run is over: its socket fills, the server stops being able to send
        # to it, and its unread lines pile up. The run's 3,000 lines are several times what
        # its socket holds.
        run_id = await slow.start_run()
        with trio.fail_after(30):
            await server.registry.get(run_id).ended.wait()
        lines: list[dict[str, Any]] = []
        reason = None
        try:
            while not lines or lines[-1]["type"] != "result":
                lines.append(await slow.next())
        except ConnectionClosed as closed:
            reason = closed.reason
        # Another client gets the result. (It subscribes after the end: a client reading
        # along in this trio run could itself fall 400 lines behind a run at latency 0.)
        await other.send(type="subscribe", run_id=run_id)
        result = (await other.until("result"))[-1]

    assert result["termination"] == "completed"
    assert lines[-1]["type"] == "error"
    assert lines[-1]["code"] == "fell_behind"
    assert "result" not in [line["type"] for line in lines]
    assert code_of_reason(reason) == CloseCode.FELL_BEHIND
    dropped = [e for e in events_of(result["log_dir"]) if e["kind"] == "subscriber_dropped"]
    assert [e["cause"] for e in dropped] == ["fell_behind"]


async def test_a_client_that_reads_late_but_within_its_buffer_still_gets_every_line_in_order(
    tmp_path: Path,
) -> None:
    config = scripted_config(300, latency=0.0, visibility="ring")
    async with (
        serving(tmp_path, config=config, client_buffer=100_000) as server,
        connect(server) as fast,
        connect(server) as late,
    ):
        run_id = await fast.start_run()
        await late.send(type="subscribe", run_id=run_id)
        # ``late`` reads nothing until the run is over: its socket fills, and the frames
        # the server could write only in part are finished by its task.
        result = (await fast.until("result"))[-1]
        lines = await late.until("result")

    stream = events(lines)
    assert lines[0]["type"] == "snapshot"
    assert [line["seq"] for line in stream] == list(
        range(lines[0]["next_seq"], lines[0]["next_seq"] + len(stream))
    )
    assert stream[-1] == result


async def test_a_malformed_frame_gets_an_error_and_the_connection_stays_usable(
    tmp_path: Path,
) -> None:
    frames: list[str | bytes] = [
        "{not json",
        b"\xff\xfe binary",
        "[1]",
        '{"type": "launch_missiles"}',
        '{"type": "start_run"}',
        '{"type": "start_run", "task": "x", "refinement": "no"}',
        '{"type": "subscribe", "run_id": "no-such-run", "request_id": "q1"}',
        '{"type": "cancel", "run_id": "no-such-run"}',
        '{"type": "unsubscribe", "run_id": "no-such-run"}',
        '{"type": "start_run", "task": "x", "agent": "agent-1"}',
        '{"type": "start_run", "task": "x", "after": "no-such-run"}',
    ]
    async with serving(tmp_path) as server, connect(server) as client:
        for frame in frames:
            await client.ws.send_message(frame)
        errors = [await client.next() for _ in frames]
        run_id = await client.start_run()
        result = (await client.until("result"))[-1]

    assert [e["type"] for e in errors] == ["error"] * len(frames)
    assert [e["code"] for e in errors] == [
        "bad_frame",
        "bad_frame",
        "bad_frame",
        "unknown_type",
        "bad_message",
        "bad_message",
        "unknown_run",
        "unknown_run",
        "not_subscribed",
        "bad_message",
        "unknown_run",
    ]
    assert errors[6]["request_id"] == "q1"
    assert result["run_id"] == run_id and result["termination"] == "completed"


async def test_cancel_ends_the_run_with_its_best_answer_so_far(tmp_path: Path) -> None:
    async with (
        serving(tmp_path, config=scripted_config(3, latency=0.2)) as server,
        connect(server) as client,
    ):
        run_id = await client.start_run()
        await client.until("answer_added")
        await client.send(type="cancel", run_id=run_id, request_id="c")
        lines = await client.until("result")

    acks = [line for line in lines if line["type"] == "ack"]
    assert acks == [{"type": "ack", "request": "cancel", "run_id": run_id, "request_id": "c"}]
    assert lines[-1]["termination"] == "cancelled"
    assert lines[-1]["final_answer"]


async def test_override_in_the_window_lets_another_agent_present(tmp_path: Path) -> None:
    async with serving(tmp_path) as server, connect(server) as client:
        run_id = await client.start_run(override_window=True)
        window = (await client.until("override_window"))[-1]
        other = next(agent for agent in window["answers"] if agent != window["winner"])
        await client.send(type="override", run_id=run_id, agent=other, request_id="o")
        lines = await client.until("result")

    verdict = next(line for line in lines if line["type"] == "verdict")
    assert verdict["accepted"] is True
    assert verdict["request_id"] == "o"
    result = lines[-1]
    assert result["decided_by"] == "override"
    assert result["presenter"] == other


async def test_continue_in_the_window_keeps_the_winner(tmp_path: Path) -> None:
    async with serving(tmp_path) as server, connect(server) as client:
        run_id = await client.start_run(override_window=True)
        window = (await client.until("override_window"))[-1]
        await client.send(type="continue", run_id=run_id)
        lines = await client.until("result")

    assert next(line for line in lines if line["type"] == "verdict")["accepted"] is True
    assert lines[-1]["decided_by"] == "votes"
    assert lines[-1]["winner"] == window["winner"]


async def test_a_window_nobody_decides_closes_after_the_decision_timeout(tmp_path: Path) -> None:
    async with serving(tmp_path) as server, connect(server) as client:
        await client.start_run(override_window=True, decision_timeout=0.2)
        lines = await client.until("result")

    assert "override_window" in [line["type"] for line in lines]
    assert lines[-1]["decided_by"] == "votes"


async def test_a_late_joiner_sees_the_open_override_window_in_its_snapshot(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path) as server, connect(server) as client:
        run_id = await client.start_run(override_window=True)
        window = (await client.until("override_window"))[-1]
        async with connect(server) as late:
            await late.send(type="subscribe", run_id=run_id)
            snapshot = await late.next()
            await late.send(type="continue", run_id=run_id)
            lines = await late.until("result")

    assert snapshot["override_window"] == {k: v for k, v in window.items() if k != "type"}
    assert lines[-1]["decided_by"] == "votes"


async def test_override_without_a_window_is_not_taken_and_says_why(tmp_path: Path) -> None:
    async with serving(tmp_path) as server, connect(server) as client:
        run_id = await client.start_run()
        await client.send(type="override", run_id=run_id, agent="agent-2")
        lines = await client.until("verdict")
        if lines[-1]["type"] != "result":
            await client.until("result")

    verdict = lines[-1]
    assert verdict["accepted"] is False
    assert verdict["error"]


async def test_a_second_turn_after_a_run_continues_its_conversation(tmp_path: Path) -> None:
    async with serving(tmp_path) as server, connect(server) as client:
        first = await client.start_run()
        answer = (await client.until("result"))[-1]["final_answer"]
        await client.send(type="start_run", task="Now shorter", after=first)
        second = (await client.next())["run_id"]
        result = (await client.until("result"))[-1]
        history = server.registry.get(second).spec.history

    assert result["termination"] == "completed"
    assert [(turn.task, turn.final_answer, turn.run_id) for turn in history] == [
        (TASK, answer, first)
    ]


async def test_runs_beyond_max_runs_are_refused_as_busy(tmp_path: Path) -> None:
    config = scripted_config(2, latency=0.3)
    async with serving(tmp_path, config=config, max_runs=1) as server, connect(server) as client:
        run_id = await client.start_run()
        await client.send(type="start_run", task=TASK, request_id="second")
        error = await client.next()
        while error["type"] != "error":
            error = await client.next()
        await client.send(type="cancel", run_id=run_id)
        await client.until("result")

    assert error["code"] == "busy"
    assert error["request_id"] == "second"


async def test_the_busy_refusal_counts_one_run_in_the_singular(tmp_path: Path) -> None:
    config = scripted_config(2, latency=0.3)
    async with serving(tmp_path, config=config, max_runs=1) as server, connect(server) as client:
        run_id = await client.start_run()
        await client.send(type="start_run", task=TASK, request_id="second")
        error = await client.next()
        while error["type"] != "error":
            error = await client.next()
        await client.send(type="cancel", run_id=run_id)
        await client.until("result")

    assert error["message"].startswith("1 run is running, the most this server runs at once")


async def test_stopping_the_server_cancels_runs_and_clients_get_their_last_lines(
    tmp_path: Path,
) -> None:
    config = scripted_config(3, latency=0.5)
    lines: list[dict[str, Any]] = []
    async with serving(tmp_path, config=config) as server, connect(server) as client:
        await client.start_run()
        await client.until("round_started")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server.stop)
            try:
                while True:
                    lines.append(await client.next())
            except ConnectionClosed as closed:
                reason = closed.reason

    assert lines[-1]["type"] == "result"
    assert lines[-1]["termination"] == "cancelled"
    assert code_of_reason(reason) == 1001
    assert events_of(lines[-1]["log_dir"])[-1]["kind"] == "run_ended"


async def test_stopping_the_server_closes_a_connection_once_its_client_answers_the_close(
    tmp_path: Path,
) -> None:
    # Not when shutdown_grace runs out: the closing handshake needs the connection's reader,
    # which the session's end used to cancel first (every stop then waited out the grace).
    # This client is wsproto by hand, so that it answers the close only once the server has
    # done all it does without the answer.
    grace = 60.0
    protocol = WSConnection(ConnectionType.CLIENT)
    async with (
        serving(tmp_path, shutdown_grace=grace) as server,
        await trio.open_tcp_stream("127.0.0.1", server.port) as stream,
    ):
        handshake = Request(host="127.0.0.1", target="/", extra_headers=bearer())
        await stream.send_all(protocol.send(handshake))
        await _first(TextMessage, protocol, stream)  # welcome
        with trio.fail_after(grace / 2):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(server.stop)
                close = await _first(CloseConnection, protocol, stream)
                await wait_all_tasks_blocked()
                await stream.send_all(protocol.send(close.response()))

    assert close.code == 1001


E = TypeVar("E", bound=Event)


async def _first(kind: type[E], protocol: WSConnection, stream: trio.SocketStream) -> E:
    """The first ``kind`` event the server sends; the events before it are passed over."""
    while True:
        for event in protocol.events():
            if isinstance(event, kind):
                return event
        protocol.receive_data(await stream.receive_some() or None)


async def test_health_answers_plain_http_get_on_the_same_port(tmp_path: Path) -> None:
    async with serving(tmp_path) as server:
        status, body = await http_get(server.port, "/health")
        missing, _ = await http_get(server.port, "/elsewhere")

    assert status == 200
    health = json.loads(body)
    assert health["status"] == "ok"
    assert health["runs"] == 0
    assert missing == 404


async def test_a_finished_run_keeps_its_result_but_not_its_actor_system(tmp_path: Path) -> None:
    def systems_alive() -> int:
        gc.collect()
        return sum(1 for thing in gc.get_objects() if type(thing) is ActorSystem)

    async with serving(tmp_path) as server:
        before = systems_alive()
        run = server.registry.start(StartRun(task=TASK, watch=False))
        await run.ended.wait()

        assert run.result is not None and run.feed.result_line is not None
        assert systems_alive() == before  # a server keeps 64 finished runs: megabytes each
