"""The session wire protocol, against a peer that plays the docker engine over a socketpair:
docker frames, the pgid line first, the end marker last, however the bytes are split."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest
import trio
import trio.testing

from conclave.actors.sandbox.output import CappedOutput
from conclave.actors.sandbox.session import SessionEnded, ShellSession, wrap_command


def frame(payload: bytes, stream: int = 1) -> bytes:
    return struct.pack(">BxxxI", stream, len(payload)) + payload


async def nonce_of(peer: trio.socket.SocketType) -> str:
    """The statement the session sent, read to its end; its nonce."""
    sent = b""
    while not sent.endswith(b"\n"):
        sent += await peer.recv(65536)
    found = re.search(rb"printf '([0-9a-f]{32}):%d", sent)
    assert found is not None
    return found.group(1).decode()


async def pair() -> tuple[ShellSession, trio.socket.SocketType]:
    ours, peer = trio.socket.socketpair()
    return ShellSession(ours, keepalive=None), peer


async def test_output_and_exit_code_survive_any_split_of_the_frames() -> None:
    session, peer = await pair()
    output = CappedOutput(1 << 20)
    async with trio.open_nursery() as nursery:
        result: list[int] = []

        async def run() -> None:
            result.append(await session.run("x", cwd=Path("/"), timeout=5, output=output))

        nursery.start_soon(run)
        nonce = await nonce_of(peer)
        wire = frame(f"{nonce}pid:42\nhel".encode()) + frame(f"lo\n{nonce}:3\n".encode())
        for i in range(len(wire)):  # one byte at a time: every split point at once
            await peer.send(wire[i : i + 1])
    assert (result, output.text(), session.pgid) == ([3], "hello\n", 42)


async def test_a_stderr_frame_is_output_too() -> None:
    session, peer = await pair()
    output = CappedOutput(1 << 20)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: session.run("x", cwd=Path("/"), timeout=5, output=output))
        nonce = await nonce_of(peer)
        await peer.send(
            frame(f"{nonce}pid:7\n".encode()) + frame(b"oops\n", 2) + frame(f"{nonce}:0\n".encode())
        )
    assert output.text() == "oops\n"


async def test_a_closed_session_raises_session_ended() -> None:
    session, peer = await pair()
    async with trio.open_nursery() as nursery:

        async def close_after_reading() -> None:
            await nonce_of(peer)
            peer.close()

        nursery.start_soon(close_after_reading)
        with pytest.raises(SessionEnded):
            await session.run("x", cwd=Path("/"), timeout=5, output=CappedOutput(10))


async def test_drain_finds_an_end_marker_begun_before_a_cancellation() -> None:
    session, peer = await pair()
    with trio.move_on_after(1):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                lambda: session.run("x", cwd=Path("/"), timeout=5, output=CappedOutput(10))
            )
            nonce = await nonce_of(peer)
            await peer.send(frame(f"{nonce}pid:9\nsome output {nonce[:20]}".encode()))
            await trio.testing.wait_all_tasks_blocked()
            nursery.cancel_scope.cancel()
    await peer.send(frame(f"{nonce[20:]}:137\n".encode()))
    assert (await session.wait_pgid(), await session.drain()) == (9, True)


def test_the_command_and_its_directory_are_quoted_for_the_shell() -> None:
    statement = wrap_command("echo 'a b' $HOME", cwd=Path("/w s"), timeout=1.5, nonce="n")
    assert b"'/w s'" in statement
    assert b"'echo '\"'\"'a b'\"'\"' $HOME'" in statement
    assert b" 3 " in statement  # the backstop: whole seconds, one past the timeout
