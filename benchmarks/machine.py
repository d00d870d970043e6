"""Facts about the machine a benchmark ran on, and memory readings."""

from __future__ import annotations

import os
import platform
import resource
import sys
from pathlib import Path
from typing import Any

__all__ = ["current_rss_kb", "filesystem_of", "machine_info", "peak_rss_kb"]


def machine_info() -> dict[str, Any]:
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
    }


def peak_rss_kb() -> int:
    """Peak resident set size of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def current_rss_kb() -> int:
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
    except OSError:
        return peak_rss_kb()
    return pages * os.sysconf("SC_PAGE_SIZE") // 1024


def filesystem_of(path: Path) -> str:
    """The type of the filesystem holding ``path`` (``ext4``, ``tmpfs``...), from the
    longest matching mount point; ``unknown`` where ``/proc/mounts`` is unavailable."""
    target = str(path.resolve())
    best, fstype = "", "unknown"
    try:
        with open("/proc/mounts") as f:
            for line in f:
                fields = line.split()
                if len(fields) < 3:
                    continue
                mount = fields[1]
                inside = target == mount or target.startswith(mount.rstrip("/") + "/")
                if inside and len(mount) > len(best):
                    best, fstype = mount, fields[2]
    except OSError:
        pass
    return fstype
