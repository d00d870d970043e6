"""A real terminal for the REPL's end-to-end specs: ``conclave`` inside tmux, keys sent with
``send-keys``, the screen read with ``capture-pane``.

Each session runs on a tmux server of its own (its socket in the test's directory, no
user config), in a pane of fixed
size, and is killed with its server at the end. Waits poll the screen with a deadline;
nothing sleeps a fixed time.

``conclave`` runs under a shell that prints its exit status when it ends: tmux marks a pane
dead only once it has reaped the process, and on a loaded machine an exited ``conclave``
was seen to stay an unreaped zombie, its pane alive, for more than the deadline.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

CONCLAVE = Path(sys.executable).with_name("conclave")
REPOSITORY = Path(__file__).parents[2]
WIDTH, HEIGHT = 120, 40
DEADLINE = 30.0
MODE_BAR = "plan mode:"
_EXITED = re.compile(r"\[conclave exited with (\d+)\]")
_SOCKETS = itertools.count(1)


def require_tmux() -> str:
    """tmux's path; without it the spec is skipped, or fails in CI (which installs it)."""
    found = shutil.which("tmux")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("tmux is not installed; CI installs it (.ci/run): the REPL specs need it")
        pytest.skip("tmux is not installed (CI installs it)")
    return found


class Terminal:
    def __init__(self, tmux: str, socket: Path) -> None:
        self._tmux = tmux
        self._socket = socket

    def _run(self, *args: str) -> str:
        done = subprocess.run(
            [self._tmux, "-S", str(self._socket), "-f", os.devnull, *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        return done.stdout

    def keys(self, *keys: str) -> None:
        """tmux key names (``Enter``, ``BTab``, ``C-o``, ``M-a``)."""
        self._run("send-keys", "-t", "repl", *keys)

    def type(self, text: str) -> None:
        """``text`` typed as it is, then Enter."""
        self._run("send-keys", "-t", "repl", "-l", text)
        self._run("send-keys", "-t", "repl", "Enter")

    def screen(self) -> str:
        return self._run("capture-pane", "-p", "-t", "repl", "-S", "-200")

    def pid(self) -> int:
        """``conclave``'s process: the child of the pane's shell (``env`` execs it)."""
        shell = self._run("display-message", "-p", "-t", "repl", "#{pane_pid}").strip()
        children = subprocess.run(
            ["ps", "-o", "pid=", "--ppid", shell], capture_output=True, text=True, check=True
        )
        return int(children.stdout.split()[0])

    def wait(self, condition: Callable[[str], bool], what: str, timeout: float = DEADLINE) -> str:
        """The screen once ``condition(screen)`` holds; fails after ``timeout`` showing it."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if condition(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; the screen:\n{screen}")
            time.sleep(0.02)

    def wait_for(self, text: str, timeout: float = DEADLINE) -> str:
        return self.wait(lambda screen: text in screen, repr(text), timeout)

    def wait_until_exited(self, timeout: float = DEADLINE) -> int:
        """``conclave``'s exit status, once it has exited (its shell prints it)."""
        screen = self.wait(lambda screen: _EXITED.search(screen) is not None, "the exit", timeout)
        found = _EXITED.search(screen)
        assert found is not None
        return int(found.group(1))

    def mode_bar(self) -> str:
        """The mode bar as drawn now (the last one on the screen)."""
        bars = [line for line in self.screen().splitlines() if MODE_BAR in line]
        return bars[-1] if bars else ""  # "": caught while answers are printed above it

    def wait_bar(self, text: str) -> str:
        """The mode bar once it shows ``text``."""
        self.wait(lambda screen: text in self.mode_bar(), f"{text!r} on the mode bar")
        return self.mode_bar()


@contextmanager
def terminal(
    cwd: Path, *args: str, tmux: str | None = None, program: Sequence[str] | None = None
) -> Iterator[Terminal]:
    """``conclave ARGS`` (or ``program ARGS``) running in a tmux pane, until the block ends."""
    found = tmux or require_tmux()
    # One socket per terminal, in the test's directory: a server just killed (a spec's
    # earlier terminal) may still be exiting, and a new one on its socket then fails.
    socket = cwd / f"tmux-{next(_SOCKETS)}.sock"
    term = Terminal(found, socket)
    env = {
        "XDG_STATE_HOME": str(cwd / "state"),
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(cwd),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(REPOSITORY),
    }
    words = [
        "env",
        *(f"{k}={v}" for k, v in env.items()),
        *(program or [str(CONCLAVE)]),
        *args,
    ]
    shell = '"$@"; echo "[conclave exited with $?]"; exec sleep 3600'
    command = " ".join(_quoted(word) for word in ["sh", "-c", shell, "sh", *words])
    term._run(
        "new-session",
        "-d",
        "-s",
        "repl",
        "-x",
        str(WIDTH),
        "-y",
        str(HEIGHT),
        "-c",
        str(cwd),
        command,
    )
    try:
        yield term
    finally:
        subprocess.run(
            [found, "-S", str(socket), "kill-server"],
            capture_output=True,
            timeout=10,
            check=False,
        )


def _quoted(text: str) -> str:
    import shlex

    return shlex.quote(text)


def started(term: Terminal) -> str:
    """The screen once the REPL's prompt and mode bar are up."""
    return term.wait_for(MODE_BAR)


def lines_with(screen: str, text: str) -> Sequence[str]:
    return [line for line in screen.splitlines() if text in line]
