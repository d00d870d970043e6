"""``!command`` in the REPL: run a shell command, show its output, and offer it as context
for the next prompt (Claude Code's bash mode).

The command runs in ``sh`` in the directory the REPL started in, on the UI's asyncio loop
(a subprocess, so the screen keeps answering), with no input, stdout and stderr together.
It is stopped (its whole process group) by Ctrl+C or after :data:`SHELL_TIMEOUT` seconds.
What it printed is kept up to :data:`MAX_KEPT_BYTES`; the model is offered the first
:data:`MAX_CONTEXT_BYTES` of that.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
from prompt_toolkit.formatted_text import StyleAndTextTuples

if TYPE_CHECKING:
    from conclave.ui.repl.app import Repl

__all__ = [
    "MAX_CONTEXT_BYTES",
    "MAX_KEPT_BYTES",
    "SHELL_TIMEOUT",
    "ShellCommands",
    "ShellEnd",
    "ShellResult",
    "context_text",
    "run_shell",
    "shell_block",
]

MAX_SHOWN_LINES = 200
"""Lines of a command's output printed on the screen; the rest are counted."""
SHELL_TIMEOUT = 120.0
"""Seconds a ``!`` command may run before it is stopped."""
MAX_KEPT_BYTES = 1024 * 1024
"""Output kept from one command; the rest is read and dropped (``!yes`` must not fill memory)."""
MAX_CONTEXT_BYTES = 16 * 1024
"""Output of one command offered to the model with the next prompt."""


class ShellEnd(enum.Enum):
    EXITED = "exited"
    TIMED_OUT = "timed_out"
    INTERRUPTED = "interrupted"
    """Ctrl+C."""


@attrs.frozen(kw_only=True)
class ShellResult:
    command: str
    output: str
    """What it printed (stdout and stderr), up to :data:`MAX_KEPT_BYTES`."""
    dropped: int
    """Bytes printed past :data:`MAX_KEPT_BYTES`."""
    end: ShellEnd
    exit_code: int | None
    """Its exit status; ``None`` when it was stopped."""

    @property
    def ending(self) -> str:
        """How it ended, for the screen and the model."""
        if self.end is ShellEnd.TIMED_OUT:
            return f"stopped after {SHELL_TIMEOUT:.0f} s"
        if self.end is ShellEnd.INTERRUPTED:
            return "stopped by Ctrl+C"
        return f"exit code {self.exit_code}"


async def run_shell(
    command: str, *, cwd: Path, stop: asyncio.Event, timeout: float = SHELL_TIMEOUT
) -> ShellResult:
    """Run ``command`` until it exits, ``stop`` is set, or ``timeout`` passes; a stopped
    command's process group is killed and reaped before this returns. Cancelling this
    kills it too."""
    process = await asyncio.create_subprocess_shell(
        command,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=cwd,
        start_new_session=True,  # its own process group: a stop reaches its children too
    )
    kept = bytearray()
    dropped = 0

    async def read() -> None:
        nonlocal dropped
        assert process.stdout is not None
        while chunk := await process.stdout.read(65536):
            room = MAX_KEPT_BYTES - len(kept)
            kept.extend(chunk[:room])
            dropped += max(0, len(chunk) - room)
        await process.wait()

    reading = asyncio.ensure_future(read())
    stopping = asyncio.ensure_future(stop.wait())
    end = ShellEnd.EXITED
    try:
        done, _ = await asyncio.wait(
            {reading, stopping}, timeout=timeout, return_when="FIRST_COMPLETED"
        )
        if reading not in done:
            end = ShellEnd.INTERRUPTED if stopping in done else ShellEnd.TIMED_OUT
    finally:
        stopping.cancel()
        if not reading.done():
            _kill_group(process.pid)
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reading
            await process.wait()
    return ShellResult(
        command=command,
        output=kept.decode("utf-8", "replace"),
        dropped=dropped,
        end=end,
        exit_code=process.returncode if end is ShellEnd.EXITED else None,
    )


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def context_text(result: ShellResult) -> str:
    """The command and its output as the next prompt carries them."""
    data = result.output.encode("utf-8")
    output = data[:MAX_CONTEXT_BYTES].decode("utf-8", "ignore").rstrip("\n")
    cut = len(data) - MAX_CONTEXT_BYTES + result.dropped
    if cut > 0:
        output += f"\n[{cut:,} more bytes not shown]"
    return (
        f"$ {result.command}\n{output}\n[{result.ending}]"
        if output
        else (f"$ {result.command}\n[{result.ending}]")
    )


def shell_block(result: ShellResult) -> StyleAndTextTuples:
    """What the screen shows of a command that ran: its output (the last
    :data:`MAX_SHOWN_LINES` lines), then how it ended."""
    from conclave.ui.timeline import neutralise  # it loads the runtime's events: not at start-up

    lines = neutralise(result.output).rstrip("\n").splitlines()
    block: StyleAndTextTuples = []
    hidden = len(lines) - MAX_SHOWN_LINES
    if hidden > 0:
        block.append(("class:shell", f"… {hidden:,} earlier lines\n"))
    block += [("class:shell", line + "\n") for line in lines[-MAX_SHOWN_LINES:]]
    if result.dropped:
        block.append(("class:shell", f"… and {result.dropped:,} more bytes, not kept\n"))
    style = "class:shell" if result.exit_code == 0 else "class:warning"
    block.append((style, f"[{result.ending}]\n"))
    return block


class ShellCommands:
    """A REPL's ``!`` commands: one at a time, on the UI's loop, stopped by Ctrl+C."""

    def __init__(self, repl: Repl) -> None:
        self._repl = repl
        self._stop: asyncio.Event | None = None
        """Set to stop the command running, if one is."""

    @property
    def running(self) -> bool:
        return self._stop is not None

    def run(self, command: str) -> None:
        """``!command``: run it, show what it printed, and keep it for the next turn."""
        repl = self._repl
        if not command:
            repl.state.tell("type a shell command after !, for example: !git status")
            return
        if self._stop is not None:
            repl.state.tell("a shell command is still running; Ctrl+C stops it")
            return
        repl.print([("class:prompt", "! "), ("class:user", command + "\n")])
        stop = self._stop = asyncio.Event()
        repl.app.create_background_task(self._run(command, stop))

    async def _run(self, command: str, stop: asyncio.Event) -> None:
        repl = self._repl
        try:
            result = await run_shell(command, cwd=Path.cwd(), stop=stop)
        except OSError as exc:
            repl.error(f"the command could not start ({exc.strerror or exc})")
            return
        finally:
            self._stop = None
        repl.print(shell_block(result))
        repl.state.shell_context.append(context_text(result))
        repl.state.tell("its output goes with your next message, as context")

    def stop(self) -> bool:
        """Ctrl+C while a command runs: stop it. Whether one was running."""
        if self._stop is None:
            return False
        self._stop.set()
        return True
