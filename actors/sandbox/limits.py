"""A local sandbox's resource limits, as kernel rlimits set by ``prlimit`` (util-linux) on
the process it starts; every process the command starts inherits them.

- CPU time (``RLIMIT_CPU``, ``cpu_seconds``): per process; past it the kernel kills it.
- Memory (``RLIMIT_DATA``, ``memory_mb``): per process, its heap and private writable
  mappings (what it has committed, not address space it merely reserved, which runtimes
  such as V8 and the JVM reserve by the gigabyte); an allocation past it fails.
- Processes (``RLIMIT_NPROC``, ``pids``): counted per user, so it is set only inside
  bubblewrap's own user namespace, where the user is the sandbox; the kernel does not apply
  it to root.

Unlike docker's cgroup limits these are per process, not the sandbox's total: the docs'
security page says what that leaves open.
"""

from __future__ import annotations

import functools
import os
import shutil

from conclave.config.schema.sandbox import SandboxConfig

__all__ = ["limit_argv", "own_user_namespace", "prlimit"]

_MIB = 1 << 20


@functools.cache
def prlimit() -> str | None:
    """The path of ``prlimit``, or ``None`` (then no limit is set, and the run says so)."""
    return shutil.which("prlimit")


def limit_argv(config: SandboxConfig, *, own_user_namespace: bool) -> list[str]:
    """The ``prlimit ... --`` prefix that sets ``config``'s limits on a command; empty
    without ``prlimit``."""
    found = prlimit()
    if found is None:
        return []
    argv = [found, f"--cpu={config.cpu_seconds}", f"--data={config.memory_mb * _MIB}"]
    if own_user_namespace:
        argv.append(f"--nproc={config.pids}")
    return [*argv, "--"]


def own_user_namespace(confined: bool) -> bool:
    """Whether a confined command runs in a user namespace of its own (bubblewrap makes one
    for a user other than root), where the process limit counts only its processes."""
    return confined and os.geteuid() != 0
