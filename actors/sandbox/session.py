"""One long-lived ``sh`` in a container, fed commands over the socket ``docker exec``
attaches, so a command costs a write and a read (well under a millisecond) rather than a
fresh exec (about 70 ms).

The wire: each command is sent as one shell statement that runs it in its own session
(``setsid``, so its process group can be killed whole), bounded by ``timeout -s KILL``
inside the container as a backstop, with stdout and stderr on one pipe. The session shell then kills
whatever the command left in its group and prints ``<nonce>:<exit code>`` on stdout. The
command's process group id goes to the session shell's own stderr, a separate stream of
docker's multiplexed protocol, so it never mixes with the output.
"""

from __future__ import annotations

import math
import secrets
import shlex
import struct
from pathlib import Path

import trio

from actors.sandbox.output import CappedOutput

__all__ = ["SessionEnded", "ShellSession", "wrap_command"]

_HEADER = struct.Struct(">BxxxI")
"""docker's stream frame: stream type (1 stdout, 2 stderr), three zero bytes, a length."""
_STDOUT, _STDERR = 1, 2


class SessionEnded(Exception):
    """The session shell is gone (the container stopped, or ran out of memory)."""


def wrap_command(command: str, *, cwd: Path, timeout: float, nonce: str) -> bytes:
    """The statement the session shell runs for ``command`` (see the module docstring)."""
    inner = 'cd -- "$1" || exit 126; exec timeout -s KILL "$2" sh -c "$3"'
    job = " ".join(
        [
            "setsid sh -c",
            shlex.quote(inner),
            "conclave",
            shlex.quote(str(cwd)),
            # A backstop: the host kills the group at ``timeout``; this ends the command even
            # if the host cannot (busybox's timeout counts whole seconds).
            str(math.ceil(timeout) + 1),
            shlex.quote(command),
        ]
    )
    return (
        f"{job} </dev/null 2>&1 & p=$!; printf '%d\\n' $p >&2; wait $p; r=$?; "
        f"kill -KILL -$p 2>/dev/null; printf '{nonce}:%d\\n' $r\n"
    ).encode()


class ShellSession:
    """The client side of one session shell. Not safe for concurrent use: the owner runs one
    command at a time."""

    def __init__(self, sock: trio.socket.SocketType, *, keepalive: object) -> None:
        self._sock = sock
        self._keepalive = keepalive  # the SDK's wrapper; its collection would close the fd
        self._frames = bytearray()
        self._pending = bytearray()
        self._errors = bytearray()
        self._sent_all = True
        self._nonce = secrets.token_hex(16)
        self._marker = f"{self._nonce}:".encode()
        self.pgid: int | None = None
        """The running command's process group inside the container, once known."""

    def close(self) -> None:
        """Closing stdin ends the session shell once its current statement is done."""
        self._sock.close()

    async def run(self, command: str, *, cwd: Path, timeout: float, output: CappedOutput) -> int:
        """Run ``command`` to its end; its output goes to ``output``; returns its exit code.

        Raises :class:`SessionEnded` if the shell goes away. Cancellation leaves the command
        running: the caller kills its group (``pgid``), then ``drain``s the session to keep it.
        """
        self.pgid = None
        self._errors.clear()
        data = wrap_command(command, cwd=cwd, timeout=timeout, nonce=self._nonce)
        self._sent_all = False
        while data:
            sent = await self._sock.send(data)
            data = data[sent:]
        self._sent_all = True
        return await self._collect(output)

    async def drain(self) -> bool:
        """After a cancelled ``run`` whose command was killed: read to its end marker,
        dropping the output, so the session can take the next command. ``False`` if the
        statement was cut short while being sent (the session is then unusable)."""
        if not self._sent_all:
            return False
        await self._collect(CappedOutput(0))
        return True

    async def _collect(self, output: CappedOutput) -> int:
        # ``_pending`` lives on the session, not here: a cancelled read may have kept the
        # first bytes of the marker, which ``drain`` must still find.
        marker = self._marker
        while True:
            at = self._pending.find(marker)
            line_end = self._pending.find(b"\n", at) if at >= 0 else -1
            if line_end >= 0:
                output.add(bytes(self._pending[:at]))
                code = int(self._pending[at + len(marker) : line_end])
                del self._pending[: line_end + 1]
                return code
            if at < 0:
                # Keep a tail that could be the start of the marker; the rest is output.
                cut = max(0, len(self._pending) - len(marker) + 1)
                output.add(bytes(self._pending[:cut]))
                del self._pending[:cut]
            stream, payload = await self._frame()
            if stream != _STDERR:
                self._pending += payload
                continue
            self._errors += payload
            if self.pgid is None and b"\n" in self._errors:
                line, _, rest = bytes(self._errors).partition(b"\n")
                self.pgid = int(line) if line.strip().isdigit() else None
                self._errors[:] = rest
            if self.pgid is not None and self._errors:
                # Anything else on stderr is the session shell's own complaint: show it.
                output.add(bytes(self._errors))
                self._errors.clear()

    async def _frame(self) -> tuple[int, bytes]:
        while True:
            if len(self._frames) >= _HEADER.size:
                stream, size = _HEADER.unpack_from(self._frames)
                end = _HEADER.size + size
                if len(self._frames) >= end:
                    payload = bytes(self._frames[_HEADER.size : end])
                    del self._frames[:end]
                    return stream, payload
            chunk = await self._sock.recv(65536)
            if not chunk:
                raise SessionEnded("the sandbox's shell ended (its container stopped?)")
            self._frames += chunk
