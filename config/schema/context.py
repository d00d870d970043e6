"""The ``orchestrator.context_paths`` section: the user's files the agents may see.

A context path is a file or directory outside the agents' workspaces: read-only for every
agent during coordination, and writable by the presenter in the final presentation when its
``permission`` is ``write`` (or by the single agent during coordination: see
:class:`ContextWritePhase`). ``protected_paths`` inside a writable one stay
read-only whatever the phase.

Paths are made absolute and resolved (symlinks followed) when the config is built, so every
later check compares real locations. Validated at the edge: the path exists, is not the
filesystem root, and a writable one is writable by this user.

The root (``/``, or whatever resolves to it) is refused rather than confirmed: granting it
makes every file this user can read a context path (``~/.ssh``, ``~/.aws``, other projects)
and, writable, lets the presenter write anywhere, which undoes the sandbox's point. A
confirmation cannot be asked in a headless run, a batch or a served run, and one "yes" in the
REPL would grant it to every run of the session; naming the directories the task needs is
always possible, so a clear refusal (a usage error, exit 2) is the one behaviour everywhere.
"""

from __future__ import annotations

import enum
import os
from pathlib import Path

import attrs

from conclave.config.schema.checks import InvalidValue

__all__ = [
    "EXISTING_PATH",
    "ContextPath",
    "ContextPermission",
    "ContextWritePhase",
    "parse_context_flag",
]

EXISTING_PATH = "an existing file or directory"
"""What a context path that does not exist was expected to be: how a problem says the path
is missing here (``conclave import massgen`` converts such a config and names the paths to
create, as a path on another machine is no reason to refuse it)."""


class ContextPermission(enum.Enum):
    READ = "read"
    WRITE = "write"

    @classmethod
    def _missing_(cls, value: object) -> ContextPermission:
        raise ValueError(f"permission {value!r} is not one of: read, write")


class ContextWritePhase(enum.Enum):
    """When writable context paths may be written: set by the modes table
    (:func:`config.modes.overrides`), never inferred elsewhere."""

    PRESENTATION = "presentation"
    """Read-only during coordination; the final presentation writes them (it runs even when
    the strategy alone would skip it: someone has to write)."""
    COORDINATION = "coordination"
    """Single agent, refinement off: the agent writes while it works, and there is no
    final presentation call."""


def _resolved(value: object) -> Path:
    if not isinstance(value, str | os.PathLike) or not str(value).strip():
        raise ValueError(
            f"a context path must be a file or directory path, such as ./src; got {value!r}"
        )
    given = Path(value)
    try:
        path = given.expanduser()
    except RuntimeError:  # ~user: no such user (or no home directory at all)
        home = given.parts[0]
        raise ValueError(
            f"context path {str(given)!r}: there is no home directory {home!r}; fix the path"
        ) from None
    try:
        return path.resolve()
    except RuntimeError:  # Python 3.11's resolve: a symbolic link loop
        raise _unusable(path.absolute(), "a symbolic link loop") from None
    except OSError as exc:
        raise _unusable(path.absolute(), exc.strerror or str(exc)) from None


def _unusable(path: Path, why: str) -> ValueError:
    """A context path the system refuses to look at (a name too long, a symbolic link
    loop): a problem with the path given, so a usage or config error, never a crash."""
    return ValueError(f"context path {str(path)!r} cannot be used ({why}); fix the path")


def _protected(values: object) -> tuple[Path, ...]:
    if isinstance(values, str | os.PathLike) or not isinstance(values, list | tuple):
        raise ValueError(
            f"'protected_paths' must be a list of paths inside the context path; got {values!r}"
        )
    kept: list[Path] = []
    for value in values:
        if not isinstance(value, str | os.PathLike) or not str(value).strip():
            raise ValueError(f"'protected_paths' lists {value!r}; expected a path")
        kept.append(Path(value).expanduser())
    return tuple(kept)


@attrs.frozen(kw_only=True)
class ContextPath:
    path: Path = attrs.field(converter=_resolved)
    """Absolute and resolved; a relative path is taken from the current directory."""
    permission: ContextPermission = attrs.field(
        default=ContextPermission.READ, converter=ContextPermission
    )
    protected_paths: tuple[Path, ...] = attrs.field(default=(), converter=_protected)
    """Inside ``path`` (a relative one is taken from ``path``), read-only even when ``path``
    is writable."""

    @property
    def writable(self) -> bool:
        return self.permission is ContextPermission.WRITE

    @property
    def protected(self) -> tuple[Path, ...]:
        """``protected_paths`` resolved against ``path``."""
        return tuple((self.path / p).resolve() for p in self.protected_paths)

    def __attrs_post_init__(self) -> None:
        if self.path == Path(self.path.anchor):
            raise ValueError(
                f"context path {str(self.path)!r} is the whole filesystem root: every agent "
                "could read every file this user can (~/.ssh, ~/.aws, other projects) and, "
                "writable, the presenter could write anywhere; give the directories the task "
                "needs instead, such as ./src"
            )
        try:
            exists = self.path.exists()
        except OSError as exc:
            raise _unusable(self.path, exc.strerror or str(exc)) from None
        if not exists:
            raise InvalidValue(
                f"context path {str(self.path)!r} does not exist; create it or fix the path",
                expected=EXISTING_PATH,
            )
        if self.writable and not os.access(self.path, os.W_OK):
            raise ValueError(
                f"context path {str(self.path)!r} has permission write but this user cannot "
                "write to it; fix its permissions or use permission: read"
            )
        try:
            protected_paths = self.protected
        except (RuntimeError, OSError) as exc:  # RuntimeError: 3.11's symbolic link loop
            why = "a symbolic link loop" if isinstance(exc, RuntimeError) else exc.strerror
            raise ValueError(
                f"a protected path of context path {str(self.path)!r} cannot be used "
                f"({why or exc}); fix the path"
            ) from None
        for protected in protected_paths:
            if protected != self.path and self.path not in protected.parents:
                raise ValueError(
                    f"protected path {str(protected)!r} is not inside its context path "
                    f"{str(self.path)!r}; list paths inside it (relative ones are taken from it)"
                )


def parse_context_flag(text: str) -> ContextPath:
    """``--context PATH`` (read-only) or ``--context PATH:w`` (writable). Raises
    ``ValueError`` naming the path and the fix when it is empty, does not exist or cannot be
    written.

    An empty path (``""``, ``":w"``: an unset shell variable in ``"$DIR:w"``) is refused, as
    in the config file: ``Path("")`` is the current directory, and granting it silently would
    widen the agents' reach to everything under it."""
    path, writable = (text[:-2], True) if text.endswith(":w") else (text, False)
    if path.endswith(":r"):
        path = path[:-2]
    if not path.strip():
        raise ValueError("the path is empty; pass a directory, such as ./src or ./src:w")
    permission = ContextPermission.WRITE if writable else ContextPermission.READ
    head, colon, suffix = path.rpartition(":")
    if colon and suffix and "/" not in suffix and not Path(path).exists() and Path(head).exists():
        raise ValueError(
            f"{path!r}: ':{suffix}' is not a permission; write PATH for read-only or PATH:w "
            "for writable"
        )
    return ContextPath(path=Path(path), permission=permission)
