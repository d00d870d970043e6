"""Outcomes over a real pipe: what a worker process writes, the batch's trio loop reads."""

from __future__ import annotations

import contextlib
import os
import pickle
import struct
from collections.abc import Iterator

import pytest
import trio

from conclave.actors.batch.outcome_pipe import OutcomeReceiver, send_outcome
from conclave.actors.batch.work import JobOutcome


def _outcome(index: int, answer: str = "an answer") -> JobOutcome:
    return JobOutcome(
        index=index, result={"final_answer": answer}, node="here", started=float(index)
    )


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read, write = os.pipe()
    yield read, write
    for fd in (read, write):
        with contextlib.suppress(OSError):
            os.close(fd)


async def _read_all(receiver: OutcomeReceiver) -> list[JobOutcome]:
    got = []
    while (outcome := await receiver.receive()) is not None:
        got.append(outcome)
    return got


async def test_outcomes_arrive_whole_and_in_order(pipe: tuple[int, int]) -> None:
    read, write = pipe
    sent = [_outcome(i) for i in range(200)]

    def writer() -> None:
        for outcome in sent:
            send_outcome(write, outcome)
        os.close(write)

    async with OutcomeReceiver(read) as receiver, trio.open_nursery() as nursery:
        nursery.start_soon(trio.to_thread.run_sync, writer)
        got = await _read_all(receiver)
    assert got == sent


async def test_an_outcome_larger_than_the_pipe_buffer_arrives_whole(
    pipe: tuple[int, int],
) -> None:
    read, write = pipe
    big = _outcome(7, "x" * 1_000_000)  # a pipe holds 64 KiB: the writer waits for reads

    def writer() -> None:
        send_outcome(write, big)
        os.close(write)

    async with OutcomeReceiver(read) as receiver, trio.open_nursery() as nursery:
        nursery.start_soon(trio.to_thread.run_sync, writer)
        got = await _read_all(receiver)
    assert got == [big]


async def test_a_frame_cut_short_by_a_dying_writer_is_dropped(pipe: tuple[int, int]) -> None:
    read, write = pipe
    send_outcome(write, _outcome(1))
    payload = pickle.dumps(_outcome(2))
    os.write(write, struct.pack("!Q", len(payload)) + payload[: len(payload) // 2])
    os.close(write)
    async with OutcomeReceiver(read) as receiver:
        assert await _read_all(receiver) == [_outcome(1)]


async def test_a_cancelled_receive_loses_no_outcome(pipe: tuple[int, int]) -> None:
    read, write = pipe
    payload = pickle.dumps(_outcome(3))
    frame = struct.pack("!Q", len(payload)) + payload
    async with OutcomeReceiver(read) as receiver:
        os.write(write, frame[:10])  # read, then the wait for the rest is cancelled
        with trio.move_on_after(0.05):
            await receiver.receive()
        os.write(write, frame[10:])
        os.close(write)
        assert await _read_all(receiver) == [_outcome(3)]


async def test_something_other_than_an_outcome_is_refused(pipe: tuple[int, int]) -> None:
    read, write = pipe
    payload = pickle.dumps({"not": "an outcome"})
    os.write(write, struct.pack("!Q", len(payload)) + payload)
    async with OutcomeReceiver(read) as receiver:
        with pytest.raises(TypeError, match="dict, not an outcome"):
            await receiver.receive()


async def test_the_receiver_reads_a_duplicate_and_leaves_the_callers_fd_open(
    pipe: tuple[int, int],
) -> None:
    read, _write = pipe
    async with OutcomeReceiver(read):
        pass
    os.fstat(read)  # still open: the caller closes it
