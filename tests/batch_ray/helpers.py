"""Watching Ray from outside: its processes, and lines as a batch appends them."""

from __future__ import annotations

import time
from pathlib import Path

RAY_COMMANDS = ("raylet", "gcs_server")


def ray_processes() -> set[int]:
    """Every live process of any Ray cluster on this machine: its raylet and GCS, its
    workers and agents (``ray::...`` titles), and the helpers Ray runs from its package."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        name, state = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2]
        if state == "Z":
            continue
        if name in RAY_COMMANDS or cmdline.startswith("ray::") or "site-packages/ray/" in cmdline:
            found.add(int(entry.name))
    return found


def wait_until_gone(before: set[int], timeout: float = 30) -> None:
    """Fail unless every Ray process not in ``before`` has exited within ``timeout``."""
    deadline = time.monotonic() + timeout
    while (left := ray_processes() - before) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, f"Ray processes left behind: {sorted(left)}"


def wait_for_lines(path: Path, count: int, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} never held {count} lines")
