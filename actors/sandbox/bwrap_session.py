"""One long-lived bubblewrap whose ``sh`` runs an agent's commands, fed over a pipe: a
command then costs a fork and an exec inside namespaces and mounts already made, rather
than a fresh bubblewrap each (its namespaces, its mounts and its exec: 4 to 24 ms on a
loaded 2-core machine; see docs/security.md, measured costs).

The wire, on the session shell's stdin: one statement per command, which runs it in a
subshell (``cd`` to its directory, then ``exec`` its ``sh -c``, which sets the limits
first; stdin from ``/dev/null``), then SIGKILLs every other process of the sandbox
(``kill -KILL -1``: in a pid namespace that is all of it but its init and the caller),
repeating until none is left alive, and only then writes ``<nonce>:<exit code>`` on
stdout. So nothing a command leaves behind (in the background, in a new session)
outlives its call, nor writes output after the end marker. stdout and stderr share the
one pipe, so output interleaves as the command wrote it; the nonce is drawn afresh for
each command, so a command cannot forge its own end, even knowing an earlier command's
marker.

A session that cannot finish a command in time (a timeout, a cancellation) is killed
whole, its pid namespace with it; its owner starts another for the next command. A session
whose owner is gone ends too: its shell meets the end of its stdin once the pipe's last
host end is closed (or collected), and exits.
"""

from __future__ import annotations

import os
import secrets
import shlex
import subprocess
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path

import trio

from conclave.actors.sandbox.output import CappedOutput
from conclave.actors.sandbox.process import kill_group, shell_status, wait_exit

__all__ = ["SESSION_SHELL", "BwrapSession", "statement"]

SESSION_SHELL = ("sh", "-c", "exec sh 2>/dev/null")
"""What runs inside bubblewrap: a shell reading statements from its stdin, its own messages
(``Killed`` for a command killed by a signal) dropped, as a command's own shell's were when
each ran in a bubblewrap of its own; each command's stderr goes to stdout."""

_REAP_S = 5.0
"""Seconds to wait for a SIGKILLed session to be reaped (the kernel does it at once)."""


def statement(argv: Sequence[str], *, cwd: Path, nonce: str) -> bytes:
    """The statement the session shell runs for ``argv`` (see the module docstring)."""
    return (
        f"(cd -- {shlex.quote(str(cwd))} && exec {shlex.join(argv)}) </dev/null 2>&1; "
        "r=$?; kill -KILL -1 2>/dev/null; "
        "while kill -0 -1 2>/dev/null; do kill -KILL -1 2>/dev/null; done; "
        f"printf '{nonce}:%d\\n' $r\n"
    ).encode()


class BwrapSession:
    """The host side of one session: its bubblewrap process and the two pipes. Runs one
    command at a time."""

    def __init__(self, child: subprocess.Popen[bytes], *, key: Hashable) -> None:
        assert child.stdin is not None and child.stdout is not None
        self._child = child
        self._stdin = trio.lowlevel.FdStream(os.dup(child.stdin.fileno()))
        self._stdout = trio.lowlevel.FdStream(os.dup(child.stdout.fileno()))
        child.stdin.close()
        child.stdout.close()
        self._buffer = bytearray()
        self._ended = False
        self.key = key
        """What the sandbox was made from (its command line, its mounts' identities): a
        command needing another sandbox does not use this one."""

    @classmethod
    def start(
        cls, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], key: Hashable
    ) -> BwrapSession:
        """Start bubblewrap running :data:`SESSION_SHELL` (``argv`` says how), from the
        calling thread: bubblewrap's ``--die-with-parent`` follows the thread that forked it,
        and the event loop's thread lives as long as the run. Raises ``OSError`` if it
        cannot be started (``cwd`` gone, no bubblewrap)."""
        child = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
        return cls(child, key=key)

    @property
    def pid(self) -> int:
        """bubblewrap's pid on the host, its process group's id too."""
        return self._child.pid

    @property
    def usable(self) -> bool:
        """Whether the session can take another command: its shell is still there."""
        return not self._ended and self._child.poll() is None

    async def run(self, argv: Sequence[str], *, cwd: Path, output: CappedOutput) -> int:
        """Run ``argv`` in ``cwd``; its output goes to ``output``; returns its
        exit code as a shell reports it. If the session ends first (bubblewrap could not set
        the sandbox up, or a command killed the session shell), what it wrote is the output
        and bubblewrap's exit status the code; the session is then not :attr:`usable`.
        Cancellation leaves the command running: the caller kills the session."""
        # Fresh per command: a command that learned an earlier marker cannot end its own.
        nonce = secrets.token_hex(16)
        marker = f"{nonce}:".encode()
        try:
            await self._stdin.send_all(statement(argv, cwd=cwd, nonce=nonce))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._ended = True  # it ended before reading: its message is on stdout
        while True:
            at = self._buffer.find(marker)
            end = self._buffer.find(b"\n", at) if at >= 0 else -1
            if end >= 0:
                output.add(bytes(self._buffer[:at]))
                code = int(self._buffer[at + len(marker) : end])
                del self._buffer[: end + 1]
                return code
            if at < 0:
                # Keep a tail that could be the start of the marker; the rest is output.
                cut = max(0, len(self._buffer) - len(marker) + 1)
                output.add(bytes(self._buffer[:cut]))
                del self._buffer[:cut]
            chunk = await self._stdout.receive_some(65536)
            if not chunk:
                self._ended = True
                output.add(bytes(self._buffer))
                self._buffer.clear()
                return shell_status(await wait_exit(self._child))
            self._buffer += chunk

    async def aclose(self) -> None:
        """Kill the session and everything in it (its pid namespace ends with its init) and
        reap it; bounded, and shielded from cancellation so nothing is left running."""
        self._ended = True
        self.kill()
        with trio.CancelScope(shield=True):
            with trio.move_on_after(_REAP_S):
                await wait_exit(self._child)
            await self._stdin.aclose()
            await self._stdout.aclose()

    def kill(self) -> None:
        """SIGKILL bubblewrap's process group at once, without waiting."""
        if self._child.returncode is None:
            kill_group(self._child.pid)
