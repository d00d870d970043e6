"""A local sandbox's resource limits, as kernel rlimits set by the command's own shell
(``ulimit``) before it runs the command; every process the command starts inherits them.

- CPU time (``RLIMIT_CPU``, ``cpu_seconds``): per process; past it the kernel kills it.
- Memory (``RLIMIT_DATA``, ``memory_mb``): per process, its heap and private writable
  mappings (what it has committed, not address space it merely reserved, which runtimes
  such as V8 and the JVM reserve by the gigabyte); an allocation past it fails.
- Processes (``RLIMIT_NPROC``, ``pids``): counted per user, so it is set only inside
  bubblewrap's own user namespace, where the user is the sandbox; the kernel does not apply
  it to root.

Why the shell's builtin and not ``prlimit``: ``prlimit`` is one more program to exec (and to
load locales for) on every command: ``run_shell`` under bubblewrap took 4.7 ms at best with
it, 3.95 ms without (docs/security.md, measured costs); ``ulimit`` is a builtin of every
``sh``, and like
``prlimit`` it sets the soft and the hard limit, so a command cannot raise them again (unless
it runs as root). Shells name the process limit differently (``-u`` in bash, ``-p`` in
dash), so the flag is found once by asking ``sh`` to set it and reading it back. When a limit
cannot be set the command does not run: the shell prints why and exits 126.

Unlike docker's cgroup limits these are per process, not the sandbox's total: the docs'
security page says what that leaves open.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess

from conclave.config.schema.sandbox import SandboxConfig

__all__ = ["limit_prefix", "nproc_flag", "own_user_namespace"]

_PROBE = 77
_MAX_PROCESSES = re.compile(rb"^Max processes\s+(\d+)\s+(\d+)", re.MULTILINE)


@functools.cache
def nproc_flag() -> str | None:
    """The ``ulimit`` option of this host's ``sh`` that sets ``RLIMIT_NPROC`` (checked by
    setting it and reading the kernel's record back), or ``None`` if it has none."""
    for flag in ("-u", "-p"):
        try:
            probe = subprocess.run(
                ["sh", "-c", f"ulimit {flag} {_PROBE} && exec cat /proc/self/limits"],
                capture_output=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        found = _MAX_PROCESSES.search(probe.stdout)
        if probe.returncode == 0 and found and found.groups() == (b"77", b"77"):
            return flag
    return None


def limit_prefix(config: SandboxConfig, *, own_user_namespace: bool) -> str:
    """The shell text that sets ``config``'s limits and stops (exit 126) if one cannot be
    set, to put before a command in the same ``sh -c``: on the same line, so the command's
    line numbers and parse errors are its own."""
    limits = [f"ulimit -t {config.cpu_seconds}", f"ulimit -d {config.memory_mb * 1024}"]
    flag = nproc_flag() if own_user_namespace else None
    if flag is not None:
        limits.append(f"ulimit {flag} {config.pids}")
    return " && ".join(limits) + " || exit 126; "


def own_user_namespace(confined: bool) -> bool:
    """Whether a confined command runs in a user namespace of its own (bubblewrap makes one
    for a user other than root), where the process limit counts only its processes."""
    return confined and os.geteuid() != 0
