"""A run's feed: lines sealed into frames shared by every watcher, one frame per interval
during a burst, joiners let in at a frame boundary with one snapshot, and frames written
for caught-up watchers as they are sealed. Timed on trio's mock clock; no sockets."""

from __future__ import annotations

import io
import itertools
import json
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
import trio.testing
from wsproto.frame_protocol import FrameProtocol, Opcode

from conclave.actors.run.driver import RunSpec
from conclave.actors.run.result import RunResult, Termination
from conclave.ui.progress import RunClock, StreamJson
from conclave.ui.serve.encoding import FrameEncoding
from conclave.ui.serve.feed import RunFeed, Watcher
from conclave.ui.serve.raw_frames import text_frame
from tests.serve.helpers import TASK, scripted_config

LIMIT = 10_000


def make_feed(tmp_path: Path, **options: float) -> RunFeed:
    spec = RunSpec(task=TASK, config=scripted_config(), log_dir=tmp_path)
    stream = StreamJson(
        io.StringIO(), spec=spec, run_id="run-1", include_partial=False, clock=RunClock()
    )
    return RunFeed(stream, **options)  # type: ignore[arg-type]


def line(n: int) -> str:
    return json.dumps({"type": "note", "n": n})


def ended() -> RunResult:
    return RunResult(
        final_answer="done",
        winner=None,
        presenter=None,
        strategy="winner",
        answers=[],
        votes={},
        rounds=1,
        llm_calls=0,
        restarts=0,
        termination=Termination.COMPLETED,
        failed_agents={},
        log_dir=None,
        duration_s=1.0,
    )


def events(texts: list[str]) -> list[str]:
    """``texts`` without the ``run_started`` line the stream writes before its ``result``
    when the run never started it (these feeds carry notes only)."""
    return [text for text in texts if not text.startswith('{"type": "run_started"')]


def spaced(frames: list[tuple[float, list[str]]], before: float, interval: float) -> bool:
    """The frames sent before ``before`` (the end seals what is left at once) come at
    least ``interval`` apart."""
    times = [at for at, _ in frames if at < before]
    return all(later - earlier >= interval - 1e-9 for earlier, later in itertools.pairwise(times))


def decode(wire: bytes) -> list[str]:
    """The text messages in ``wire``, as a websocket client library reads them."""
    client = FrameProtocol(client=True, extensions=[])
    client.receive_bytes(wire)
    messages: list[str] = []
    parts: list[str] = []
    for frame in client.received_frames():
        assert frame.opcode in (Opcode.TEXT, Opcode.CONTINUATION)
        assert isinstance(frame.payload, str)
        parts.append(frame.payload)
        if frame.message_finished:
            messages.append("".join(parts))
            parts = []
    assert not parts, "a message was cut short"
    return messages


def watch(feed: RunFeed, name: str = "w", **options: object) -> Watcher:
    return feed.watch(limit=LIMIT, on_drop=lambda reason: None, name=name, **options)  # type: ignore[arg-type]


@asynccontextmanager
async def flushing(feed: RunFeed) -> AsyncIterator[None]:
    """The feed's flusher running beside the test, as beside a run."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(feed.flush_until_finished)
        yield
        nursery.cancel_scope.cancel()


async def read(watcher: Watcher, frames: list[tuple[float, list[str]]]) -> None:
    """A watcher's task: every frame it is sent, with when, until the feed is done."""
    while not watcher.done:
        await watcher.wait()
        data = watcher.take(1 << 20)
        for message in decode(data):
            frames.append((trio.current_time(), message.split("\n")))


def test_a_shared_frame_of_any_size_is_one_websocket_text_frame() -> None:
    for size in (0, 1, 125, 126, 65535, 65536, 300_000):
        text = "é" * (size // 2) + "x" * (size % 2)
        assert decode(text_frame(text.encode("utf-8"))) == [text]


async def test_a_burst_of_lines_goes_out_in_frames_at_most_one_per_interval(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    feed = make_feed(tmp_path, flush_interval=0.1)
    watcher = watch(feed)
    frames: list[tuple[float, list[str]]] = []
    async with flushing(feed), trio.open_nursery() as nursery:
        nursery.start_soon(read, watcher, frames)
        for n in range(100):  # a line every 10 ms for a second
            feed.note(line(n))
            await trio.sleep(0.01)
        end = trio.current_time()
        feed.finish(ended())

    assert spaced(frames, end, 0.1)
    assert len(frames) <= 13
    got = events([text for _, lines in frames for text in lines])
    assert got[:-1] == [line(n) for n in range(100)]
    assert json.loads(got[-1])["type"] == "result"


async def test_the_first_line_after_a_quiet_spell_goes_out_at_once(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    feed = make_feed(tmp_path, flush_interval=0.1)
    watcher = watch(feed)
    frames: list[tuple[float, list[str]]] = []
    async with flushing(feed), trio.open_nursery() as nursery:
        nursery.start_soon(read, watcher, frames)
        await trio.sleep(5)
        published = trio.current_time()
        feed.note(line(1))
        await trio.sleep(1)
        feed.finish(ended())

    assert frames[0] == (published, [line(1)])


async def test_with_more_watchers_than_the_fanout_rate_allows_frames_come_further_apart(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    feed = make_feed(tmp_path, flush_interval=0.02, fanout_rate=1000)
    watchers = [watch(feed, f"w{i}") for i in range(100)]
    frames: list[tuple[float, list[str]]] = []
    async with flushing(feed), trio.open_nursery() as nursery:
        nursery.start_soon(read, watchers[0], frames)
        for other in watchers[1:]:
            nursery.start_soon(read, other, [])
        for n in range(100):
            feed.note(line(n))
            await trio.sleep(0.01)
        assert feed.interval == pytest.approx(0.1)
        end = trio.current_time()
        feed.finish(ended())

    assert spaced(frames, end, 0.1)
    assert len(frames) <= 13


async def test_watchers_joining_in_one_interval_share_one_snapshot_that_their_lines_continue(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    feed = make_feed(tmp_path, flush_interval=0.1)
    first = watch(feed, "first")
    async with flushing(feed), trio.open_nursery() as nursery:
        nursery.start_soon(read, first, [])
        for n in range(10):
            feed.note(line(n))
            await trio.sleep(0.01)
        joiners = [
            feed.join(limit=LIMIT, on_drop=lambda reason: None, name=f"j{i}") for i in range(5)
        ]
        feed.note(line(10))  # before the boundary: not theirs
        assert not any(joiner.admitted.is_set() for joiner in joiners)
        await joiners[0].admitted.wait()
        feed.note(line(11))  # after it: theirs
        frames: list[tuple[float, list[str]]] = []
        nursery.start_soon(read, joiners[0], frames)
        await trio.sleep(1)
        feed.finish(ended())

    assert all(joiner.admitted.is_set() for joiner in joiners)
    assert all(joiner.snapshot is joiners[0].snapshot for joiner in joiners)
    assert frames[0][1][0] == line(11)


async def test_a_watcher_joining_as_the_run_ends_gets_the_result_line(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    feed = make_feed(tmp_path, flush_interval=0.1)
    async with flushing(feed):
        feed.note(line(1))
        joiner = feed.join(limit=LIMIT, on_drop=lambda reason: None, name="late")
        feed.finish(ended())
        frames: list[tuple[float, list[str]]] = []
        await read(joiner, frames)

    assert joiner.snapshot is not None
    assert not joiner.snapshot.ended
    got = events([text for _, lines in frames for text in lines])
    assert [json.loads(text)["type"] for text in got] == ["result"]


async def test_a_caught_up_watcher_gets_each_frame_written_as_it_is_sealed(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    written: list[bytes] = []

    def write(data: bytes) -> int:
        written.append(data)
        return len(data)

    feed = make_feed(tmp_path, flush_interval=0.1)
    watcher = watch(feed, write=write)
    woken = 0
    async with flushing(feed), trio.open_nursery() as nursery:

        async def task() -> None:
            nonlocal woken
            while not watcher.done:
                await watcher.wait()
                woken += 1
                assert watcher.take(1 << 20) == b""

        nursery.start_soon(task)
        for n in range(30):
            feed.note(line(n))
            await trio.sleep(0.05)
        await trio.sleep(1)
        assert woken == 0  # every frame went out without the task
        feed.finish(ended())

    lines = [text for data in written for message in decode(data) for text in message.split("\n")]
    assert events(lines)[:-1] == [line(n) for n in range(30)]
    assert json.loads(lines[-1])["type"] == "result"
    assert watcher.taken == len(lines)


async def test_what_a_full_socket_did_not_take_is_sent_by_the_watchers_task(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    def write(data: bytes) -> int:
        return 7  # a socket with room for 7 bytes

    feed = make_feed(tmp_path, flush_interval=0.1)
    watcher = watch(feed, write=write)
    async with flushing(feed):
        feed.note(line(1))
        await watcher.wait()
        rest = watcher.take(1 << 20)
        feed.finish(ended())

    wire = feed.frames[0].wire(FrameEncoding.TEXT)
    assert rest == wire[7:]
    assert decode(wire) == [line(1)]


async def test_a_watcher_that_falls_too_far_behind_is_dropped_and_the_feed_goes_on(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    reasons: list[str] = []
    feed = make_feed(tmp_path, flush_interval=0.01)
    slow = feed.watch(limit=100, on_drop=reasons.append, name="slow")
    async with flushing(feed):
        for n in range(300):
            feed.note(line(n))
            await trio.sleep(0.001)
        feed.finish(ended())

    assert slow.dropped is not None
    assert reasons == [slow.dropped]
    assert feed.watchers == 0


async def test_a_frame_is_compressed_only_while_a_watcher_takes_zlib_and_holds_the_same_lines(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    feed = make_feed(tmp_path, flush_interval=0.1)
    plain = watch(feed, "plain")
    async with flushing(feed):
        feed.note(line(1))
        await plain.wait()
        compressed = watch(feed, "compressed", encoding=FrameEncoding.ZLIB)
        feed.note(line(2))
        await compressed.wait()
        feed.finish(ended())

    first, second = feed.frames[:2]
    assert set(first.wires) == {FrameEncoding.TEXT}
    assert set(second.wires) == {FrameEncoding.TEXT, FrameEncoding.ZLIB}
    zlib_wire = second.wire(FrameEncoding.ZLIB)
    assert zlib_wire[0] == 0x82  # binary
    assert zlib.decompress(zlib_wire[2:]).decode() == decode(second.wire(FrameEncoding.TEXT))[0]
    assert compressed.take(1 << 20).startswith(zlib_wire)
