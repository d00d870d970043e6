"""bubblewrap's command line: what a confined process (a local shell command, a stdio MCP
server) sees of the host.

The root is an empty tmpfs, made read-only once laid out. On it: the system directories
read-only (:data:`SYSTEM_DIRS`: programs, libraries, ``/etc``), a fresh ``/dev`` and
``/proc``, a private ``/tmp``, and the given mounts at their host paths. Nothing else of the
host is there: not the home directory (``~/.ssh``, ``~/.aws``, ``~/.netrc``, ``~/.docker``,
``~/.config``), not ``/root``, ``/home``, ``/var``, ``/run``, ``/mnt``, unless a mount shows
part of it. The process also gets its own pid, IPC and hostname namespaces, no network
unless asked, and (as a user other than root) its own user namespace, which is what makes
the process limit count the sandbox's processes rather than all of the user's.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path

import attrs

from conclave.actors.sandbox.protocol import Mount

__all__ = ["SYSTEM_DIRS", "Confinement", "bwrap_argv", "system_mounts"]

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
"""Shown read-only in every confined process, where they exist: what programs need to run
(a symlink such as ``/bin -> usr/bin`` is recreated as the same symlink)."""

_RESOLV_CONF = Path("/etc/resolv.conf")


@attrs.frozen(kw_only=True)
class Confinement:
    """What one confined process sees besides the system directories."""

    mounts: tuple[Mount, ...]
    """Host paths shown at the same path, read-only unless writable."""
    covers: tuple[Path, ...] = ()
    """Directories covered by an empty read-only directory, even inside a mount (the run's
    own directories); a mount deeper inside one is still shown. Only those that exist and
    that a mount would show are covered (checked when the command line is made)."""
    cwd: Path
    """Where the process starts; made (empty) if no mount shows it."""
    network: bool = False
    die_with_parent: bool = True
    """Killed when the thread that started bubblewrap ends: right for a command started
    from the event loop's thread, wrong for a process started from a worker thread."""


def _under(path: Path, roots: Sequence[str]) -> bool:
    text = str(path)
    return any(text == root or text.startswith(root + "/") for root in roots)


@functools.cache
def system_mounts() -> tuple[str, ...]:
    """bubblewrap's arguments for :data:`SYSTEM_DIRS` as this host has them (a symlink as the
    same symlink, a directory bound read-only)."""
    argv: list[str] = []
    for name in SYSTEM_DIRS:
        path = Path(name)
        if path.is_symlink():
            argv += ["--symlink", os.readlink(path), name]
        elif path.is_dir():
            argv += ["--ro-bind", name, name]
    return tuple(argv)


def _resolver_mount() -> list[str]:
    """With network: ``/etc/resolv.conf`` often links outside ``/etc`` (systemd-resolved's
    ``/run/systemd/resolve/stub-resolv.conf``); its target is shown, read-only."""
    target = _RESOLV_CONF.resolve()
    if not target.is_file() or _under(target, SYSTEM_DIRS):
        return []
    return ["--ro-bind", str(target), str(target)]


def bwrap_argv(bwrap: str, confinement: Confinement, command: Sequence[str]) -> list[str]:
    """The command line that runs ``command`` inside bubblewrap as ``confinement`` says.

    Mounts go parents before children, so a read-only path inside a writable one stays
    read-only and what is shown inside a covered directory is mounted over its cover."""
    binds: list[tuple[str, Path]] = [
        ("--bind" if m.writable else "--ro-bind", m.path) for m in confinement.mounts
    ]
    covers = [
        p
        for p in confinement.covers
        if p.is_dir() and any(m.path == p or m.path in p.parents for m in confinement.mounts)
    ]
    binds += [("--tmpfs", p) for p in covers]
    binds.sort(key=lambda b: len(b[1].parts))
    argv = [bwrap, *system_mounts(), "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    if confinement.network:
        argv += _resolver_mount()
    for flag, path in binds:
        argv += [flag, str(path)] if flag == "--tmpfs" else [flag, str(path), str(path)]
    for path in covers:  # only the cover: the mounts inside it keep their own mode
        argv += ["--remount-ro", str(path)]
    argv += ["--dir", str(confinement.cwd), "--remount-ro", "/"]
    argv += ["--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if os.geteuid() != 0:
        argv.append("--unshare-user")
    if not confinement.network:
        argv.append("--unshare-net")
    if confinement.die_with_parent:
        argv.append("--die-with-parent")
    return [*argv, "--chdir", str(confinement.cwd), "--", *command]
