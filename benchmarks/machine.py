"""Facts about the machine a benchmark ran on, and memory readings."""

from __future__ import annotations

import os
import platform
import resource
import sys
from typing import Any

__all__ = ["current_rss_kb", "machine_info", "peak_rss_kb"]


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
