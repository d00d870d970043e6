"""The path policy: which paths an agent's file tools may read and write.

A path is judged by where it lands, never by how it is spelled: it is joined to the agent's
working directory and resolved (``realpath``) first, so ``..``, absolute paths and symlinks
cannot talk their way out. It must then lie in one of the agent's grants (its workspace,
the answer snapshots it may read, the context paths); a write needs the most specific grant
that holds it to be writable, and the path outside that grant's protected paths. A
directory grant's root is not a file to write; a single-file grant's root is the file granted.

Checking a path is only half of it: between the check and the open a symlink may be swapped
in. :mod:`actors.tools.fs` opens what the policy resolved without following links and checks
again where the opened file really is.

Grants are asked for at every check, because they change during a run: snapshots appear as
answers are seen, and context paths become writable for the presentation.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

import attrs

__all__ = ["Grants", "PathGrant", "PathPolicy", "PathRefused", "StaticGrants"]


@attrs.frozen(kw_only=True)
class PathGrant:
    root: Path
    """Already resolved (realpath)."""
    writable: bool
    protected: tuple[Path, ...] = ()
    """Resolved; read-only even when the grant is writable."""
    label: str = ""
    """What the grant is, for messages: ``workspace``, ``snapshot agent2.1``, ``context /x``."""
    single_file: bool = False
    """The grant is one file (a context path ``FILE:w``): writing, editing and deleting
    ``root`` itself is what it grants. A directory's root is never written as a file."""
    writable_later: bool = False
    """Read-only now, writable in the final presentation: a writable context path (``:w``,
    ``permission: write``) during the answer rounds. A refused write says so, naming the
    phase: a plain "read-only" contradicts the ``:w`` the user gave."""

    def holds(self, path: str) -> bool:
        return _within(path, str(self.root))

    def protects(self, path: str) -> bool:
        return any(_within(path, str(p)) for p in self.protected)

    def describe(self) -> str:
        return f"{self.label} ({self.root})" if self.label else str(self.root)


class Grants(Protocol):
    def grants(self) -> tuple[PathGrant, ...]:
        """Asked at every call: snapshots appear as answers are seen, context paths become
        writable in the presentation."""
        ...


@attrs.frozen
class StaticGrants:
    """Grants that never change: tests, benchmarks, and agents with only a workspace."""

    fixed: tuple[PathGrant, ...]

    def grants(self) -> tuple[PathGrant, ...]:
        return self.fixed


class PathRefused(Exception):
    """A path the agent may not use; the message is written for the model."""


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root if root.endswith(os.sep) else root + os.sep)


class PathPolicy:
    """Resolves an agent's paths and judges them against its grants."""

    def __init__(self, grants: Grants, *, cwd: Path) -> None:
        self._grants = grants
        self.cwd = Path(os.path.realpath(cwd))

    def resolve(self, path: str) -> Path:
        """Where ``path`` lands: relative paths start at the working directory."""
        if not path:
            raise PathRefused("the path is empty: give a file path relative to your workspace")
        if "\x00" in path:
            raise PathRefused(f"the path {path!r} contains a NUL byte: give a plain file path")
        return Path(os.path.realpath(os.path.join(self.cwd, path)))

    def grant_for(self, resolved: Path) -> PathGrant | None:
        """The most specific grant holding ``resolved``: a snapshot inside a writable
        context path stays read-only, a workspace inside a read-only one stays writable."""
        text = str(resolved)
        best: PathGrant | None = None
        for grant in self._grants.grants():
            if grant.holds(text) and (best is None or len(str(grant.root)) > len(str(best.root))):
                best = grant
        return best

    def for_read(self, path: str) -> Path:
        """``path`` resolved; raises :class:`PathRefused` unless some grant holds it."""
        resolved = self.resolve(path)
        self.check_read(resolved, spelled=path)
        return resolved

    def for_write(self, path: str) -> Path:
        """``path`` resolved; raises :class:`PathRefused` unless a writable grant holds it
        outside its protected paths."""
        resolved = self.resolve(path)
        self.check_write(resolved, spelled=path)
        return resolved

    def check_read(self, resolved: Path, *, spelled: str | None = None) -> PathGrant:
        grant = self.grant_for(resolved)
        if grant is None:
            raise PathRefused(self._outside(resolved, spelled, "read"))
        return grant

    def check_write(self, resolved: Path, *, spelled: str | None = None) -> PathGrant:
        grant = self.grant_for(resolved)
        if grant is None:
            raise PathRefused(self._outside(resolved, spelled, "write"))
        named = _named(resolved, spelled)
        if not grant.writable and grant.writable_later:
            raise PathRefused(
                f"{named} is in {grant.describe()}, which is writable only in the final "
                "presentation: in the answer rounds it is read-only. Make the change in "
                f"{self._writable_roots()} now; the final presentation writes it there"
            )
        if not grant.writable:
            raise PathRefused(
                f"{named} is in {grant.describe()}, which is read-only: "
                f"write inside {self._writable_roots()} instead"
            )
        if resolved == grant.root and not grant.single_file:
            raise PathRefused(
                f"{named} is the root of {grant.describe()} itself: give a file path inside it"
            )
        if grant.protects(str(resolved)):
            raise PathRefused(
                f"{named} is a protected path inside {grant.describe()} and stays read-only: "
                "leave it unchanged"
            )
        return grant

    def is_granted_file(self, resolved: Path) -> bool:
        """Whether ``resolved`` is a single-file grant itself: such a file is rewritten in
        place (:func:`actors.tools.fs.write_in_place`), as the sandboxes bind-mount its inode."""
        grant = self.grant_for(resolved)
        return grant is not None and grant.single_file and resolved == grant.root

    def _outside(self, resolved: Path, spelled: str | None, verb: str) -> str:
        grants = self._grants.grants()
        roots = [g.describe() for g in grants if verb == "read" or g.writable]
        allowed = ", ".join(roots) if roots else "nothing"
        return (
            f"{_named(resolved, spelled)} is outside the paths you may {verb}: {allowed}. "
            "Use a path inside one of them (relative paths start in your workspace)"
        )

    def _writable_roots(self) -> str:
        roots = [g.describe() for g in self._grants.grants() if g.writable]
        return ", ".join(roots) if roots else "nothing (no writable path is granted)"


def _named(resolved: Path, spelled: str | None) -> str:
    if spelled is None or spelled == str(resolved):
        return f"the path {str(resolved)!r}"
    return f"the path {spelled!r} (which resolves to {str(resolved)!r})"
