"""Compressed frames, for the clients that ask: a client proposing ``conclave.v1.zlib`` gets
a run's lines and snapshots as binary frames of zlib data, the same lines a text client
gets; every other client is served text, as before."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import trio

from conclave.ui.serve.auth import SUBPROTOCOL
from conclave.ui.serve.encoding import ZLIB_SUBPROTOCOL, FrameEncoding, encoded_frame, negotiate
from conclave.ui.serve.raw_frames import binary_frame, text_frame
from tests.serve.helpers import TASK, Client, connect, scripted_config, serving


def test_a_client_proposing_zlib_gets_it_before_conclave_v1() -> None:
    assert negotiate([SUBPROTOCOL, ZLIB_SUBPROTOCOL]) == (ZLIB_SUBPROTOCOL, FrameEncoding.ZLIB)
    assert negotiate([SUBPROTOCOL]) == (SUBPROTOCOL, FrameEncoding.TEXT)
    assert negotiate([]) == (None, FrameEncoding.TEXT)


def test_a_zlib_frame_is_a_binary_frame_of_the_texts_zlib_data() -> None:
    payload = b'{"type": "note", "n": 1}\n{"type": "note", "n": 2}'

    wire = encoded_frame(payload, FrameEncoding.ZLIB)

    assert wire == binary_frame(zlib.compress(payload, 1))
    assert zlib.decompress(wire[2:]) == payload
    assert encoded_frame(payload, FrameEncoding.TEXT) == text_frame(payload)


def seqs(lines: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {line["seq"]: line for line in lines if "seq" in line}


async def test_a_zlib_client_gets_the_same_lines_as_a_text_client_in_binary_frames(
    tmp_path: Path,
) -> None:
    got: dict[str, list[dict[str, Any]]] = {}
    clients: dict[str, Client] = {}
    async with (
        serving(tmp_path, config=scripted_config(5, latency=0.05)) as server,
        connect(server) as starter,
    ):
        await starter.send(type="start_run", task=TASK, watch=False)
        run_id = (await starter.next())["run_id"]

        async def watch(name: str, subprotocols: list[str] | None) -> None:
            async with connect(server, subprotocols=subprotocols) as client:
                clients[name] = client
                await client.send(type="subscribe", run_id=run_id)
                got[name] = await client.until("result")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch, "text", None)
            nursery.start_soon(watch, "zlib", [ZLIB_SUBPROTOCOL])

    text, compressed = seqs(got["text"]), seqs(got["zlib"])
    common = sorted(set(text) & set(compressed))
    assert len(common) > 10
    assert [text[seq] for seq in common] == [compressed[seq] for seq in common]
    assert got["zlib"][0]["type"] == "snapshot"
    assert clients["zlib"].ws.subprotocol == ZLIB_SUBPROTOCOL
    # Its snapshot and every run line came compressed; the text client got none so.
    assert clients["zlib"].binary[0][0] == "snapshot"
    assert sum(len(kinds) for kinds in clients["zlib"].binary) == len(got["zlib"])
    assert clients["text"].binary == []


async def test_a_zlib_client_that_starts_a_run_gets_its_reply_as_text_and_its_lines_compressed(
    tmp_path: Path,
) -> None:
    async with (
        serving(tmp_path) as server,
        connect(server, subprotocols=[ZLIB_SUBPROTOCOL]) as client,
    ):
        await client.start_run()
        lines = await client.until("result")

    assert client.text == [["welcome"], ["run_accepted"]]
    assert [kind for kinds in client.binary for kind in kinds] == [line["type"] for line in lines]
    assert lines[-1]["termination"] == "completed"


async def test_a_zlib_client_subscribing_after_the_end_gets_the_snapshot_and_result_compressed(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path) as server:
        async with connect(server) as starter:
            run_id = await starter.start_run()
            text_result = (await starter.until("result"))[-1]
        async with connect(server, subprotocols=[ZLIB_SUBPROTOCOL]) as late:
            await late.send(type="subscribe", run_id=run_id)
            lines = await late.until("result")

    assert [line["type"] for line in lines] == ["snapshot", "result"]
    assert late.binary == [["snapshot"], ["result"]]
    assert lines[-1] == text_result
