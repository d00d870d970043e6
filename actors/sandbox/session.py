"""One long-lived ``sh`` in a container, fed commands over the socket ``docker exec``
attaches, so a command costs a write and a read (about a millisecond) rather than a fresh
exec (about 70 ms).

The wire: each command is sent as one shell statement that starts it in its own session
(``setsid``, so its process group can be killed whole) with stdout and stderr on one pipe,
bounded inside the container by ``timeout -s KILL`` as a backstop. On stdout, in order:
``<nonce>pid:<pgid>`` (written by the job itself before it runs the command, so it comes
first), the command's output, then, once the session shell has killed whatever the command
left in its group, ``<nonce>:<exit code>``. Docker carries stdout and stderr as separate
streams whose order relative to each other is not kept, so the session shell runs with its
stderr on stdout (``sh -c 'exec sh 2>&1'``): its own messages, such as ``Killed`` for a job
it reaped, then stay in order too.
"""

from __future__ import annotations

import math
import secrets
import shlex
import struct
from pathlib import Path

import trio

from conclave.actors.sandbox.output import CappedOutput

__all__ = ["SESSION_SHELL", "SessionEnded", "ShellSession", "wrap_command"]

_HEADER = struct.Struct(">BxxxI")
"""docker's stream frame: stream type (1 stdout, 2 stderr), three zero bytes, a length."""

SESSION_SHELL = ["sh", "-c", "exec sh 2>&1"]
"""What the session runs: a shell reading statements from stdin, its stderr on stdout."""


class SessionEnded(Exception):
    """The session shell is gone (the container stopped, or ran out of memory)."""


def wrap_command(command: str, *, cwd: Path, timeout: float, nonce: str) -> bytes:
    """The statement the session shell runs for ``command`` (see the module docstring)."""
    job = (
        f"printf '{nonce}pid:%d\\n' $$; "
        'cd -- "$1" || exit 126; exec timeout -s KILL "$2" sh -c "$3"'
    )
    started = " ".join(
        [
            "setsid sh -c",
            shlex.quote(job),
            "conclave",
            shlex.quote(str(cwd)),
            # A backstop: the host kills the group at ``timeout``; this ends the command even
            # if the host cannot (busybox's timeout counts whole seconds).
            str(math.ceil(timeout) + 1),
            shlex.quote(command),
        ]
    )
    return (
        f"{started} </dev/null 2>&1 & p=$!; wait $p; r=$?; "
        f"kill -KILL -$p 2>/dev/null; printf '{nonce}:%d\\n' $r\n"
    ).encode()


class ShellSession:
    """The client side of one session shell. Not safe for concurrent use: the owner runs one
    command at a time."""

    def __init__(self, sock: trio.socket.SocketType, *, keepalive: object) -> None:
        self._sock = sock
        self._keepalive = keepalive  # the SDK's wrapper; its collection would close the fd
        self._frames = bytearray()
        self._stdout = bytearray()
        self._sent_all = True
        nonce = secrets.token_hex(16)
        self._nonce = nonce
        self._pid_marker = f"{nonce}pid:".encode()
        self._end_marker = f"{nonce}:".encode()
        self.pgid: int | None = None
        """The running command's process group inside the container, once known."""

    def close(self) -> None:
        """Closing stdin ends the session shell once its current statement is done."""
        self._sock.close()

    async def run(self, command: str, *, cwd: Path, timeout: float, output: CappedOutput) -> int:
        """Run ``command`` to its end; its output goes to ``output``; returns its exit code.

        Raises :class:`SessionEnded` if the shell goes away. Cancellation leaves the command
        running: the caller kills its group (``wait_pgid``), then ``drain``s the session to
        use it again.
        """
        self.pgid = None
        data = wrap_command(command, cwd=cwd, timeout=timeout, nonce=self._nonce)
        self._sent_all = False
        while data:
            sent = await self._sock.send(data)
            data = data[sent:]
        self._sent_all = True
        return await self._collect(output)

    async def wait_pgid(self) -> int | None:
        """The running command's process group, reading until it is known; ``None`` if the
        statement was cut short while being sent."""
        if not self._sent_all:
            return None
        while self.pgid is None:
            self._take_pgid()
            if self.pgid is None:
                await self._pump()
        return self.pgid

    async def drain(self) -> bool:
        """After a cancelled ``run`` whose command was killed: read to its end marker,
        dropping the output, so the session can take the next command. ``False`` if the
        statement was cut short while being sent (the session is then unusable)."""
        if not self._sent_all:
            return False
        await self._collect(CappedOutput(0))
        return True

    def _take_pgid(self) -> None:
        """The job's first line on stdout is its pgid (nothing of the command precedes it)."""
        at = self._stdout.find(self._pid_marker)
        end = self._stdout.find(b"\n", at) if at >= 0 else -1
        if end >= 0:
            self.pgid = int(self._stdout[at + len(self._pid_marker) : end])
            del self._stdout[: end + 1]

    async def _collect(self, output: CappedOutput) -> int:
        # The buffers live on the session, not here: a cancelled read may have kept part of
        # a marker, which ``drain`` must still find.
        marker = self._end_marker
        while True:
            if self.pgid is None:
                self._take_pgid()
            if self.pgid is not None:
                at = self._stdout.find(marker)
                end = self._stdout.find(b"\n", at) if at >= 0 else -1
                if end >= 0:
                    output.add(bytes(self._stdout[:at]))
                    code = int(self._stdout[at + len(marker) : end])
                    del self._stdout[: end + 1]
                    return code
                if at < 0:
                    # Keep a tail that could be the start of the marker; the rest is output.
                    cut = max(0, len(self._stdout) - len(marker) + 1)
                    output.add(bytes(self._stdout[:cut]))
                    del self._stdout[:cut]
            await self._pump()

    async def _pump(self) -> None:
        """Read one frame into the stdout buffer (a stderr frame too: there should be none)."""
        while True:
            if len(self._frames) >= _HEADER.size:
                _stream, size = _HEADER.unpack_from(self._frames)
                end = _HEADER.size + size
                if len(self._frames) >= end:
                    self._stdout += self._frames[_HEADER.size : end]
                    del self._frames[:end]
                    return
            chunk = await self._sock.recv(65536)
            if not chunk:
                raise SessionEnded("the sandbox's shell ended (its container stopped?)")
            self._frames += chunk
