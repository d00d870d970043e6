"""Where runs' logs go, checked before anything runs: ``conclave run``'s log directory
(``--log-dir``, or a new one under ``.conclave/runs``), and the root that each run of
``conclave serve``, ``conclave chat`` and the REPL makes its own directory under
(``--log-dir``, or ``.conclave/runs``: checked, not made). A directory that cannot be used
(a name too long, a symbolic link loop), created or written in is a usage error (exit 2)
naming it, said at start rather than from inside a run, a client's request or a turn.
Shared by the front ends, so each says it in the same words.
"""

from __future__ import annotations

import contextlib
import secrets
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from conclave.config.resolver import UsageError
from conclave.ui.text import display_path

__all__ = ["DEFAULT_LOG_ROOT", "resolve_log_dir", "resolve_log_root"]

DEFAULT_LOG_ROOT = Path(".conclave") / "runs"
"""Where runs' directories go unless ``--log-dir`` says otherwise."""


def resolve_log_dir(given: str | None) -> Path:
    """The run's log directory, created and known to be writable, with no log in it yet.

    Messages name ``--log-dir`` only when the user gave it: a problem with the default
    directory is not a problem with a flag they never typed.
    """
    stamp = time.strftime("%Y%m%d-%H%M%S")
    default = DEFAULT_LOG_ROOT / f"{stamp}-{secrets.token_hex(3)}"
    path, what, advice = _named(
        given, "the directory for the run's event log", default, "the run's log directory"
    )
    log = path / "events.jsonl"
    with _refused(what, "cannot use it", advice):  # a name too long, a symbolic link loop
        taken = log.is_symlink() or log.exists()
    if taken:
        raise UsageError(f"{what} already holds a run (events.jsonl); choose a new directory")
    _make_writable(path, what, advice)
    return path


def resolve_log_root(given: str | None) -> Path:
    """The directory each run makes its own log directory under (``--log-dir``, else
    :data:`DEFAULT_LOG_ROOT`), checked as :func:`resolve_log_dir` checks a run's, in the
    same words, but not made: a session that launches no run leaves nothing behind. A root
    not there yet must be one its nearest existing parent lets the runs create."""
    path, what, advice = _named(
        given, "the directory the runs' logs go under", DEFAULT_LOG_ROOT, "the runs' log directory"
    )
    with _refused(what, "cannot use it", advice):  # a name too long, a symbolic link loop
        there = path.exists()
    if there:
        with _refused(what, "cannot write in it", advice), tempfile.TemporaryFile(dir=path):
            pass
        return path
    parent = next(p for p in (*path.absolute().parents, Path("/")) if p.exists())
    with _refused(what, "cannot create it", advice), tempfile.TemporaryFile(dir=parent):
        pass
    return path


def _named(given: str | None, wanted: str, default: Path, called: str) -> tuple[Path, str, str]:
    """The directory to check, how messages name it and what they advise: ``--log-dir``'s
    if the user gave it (``wanted`` says what an empty one should have been), else
    ``default``, ``called`` so."""
    if given is None:
        return (
            default,
            f"{called} {display_path(default)}",
            "run conclave from a writable directory",
        )
    if not given.strip():
        raise UsageError(f"--log-dir is empty; pass {wanted}")
    path = Path(given)
    return path, f"--log-dir {display_path(path)}", "pass a writable directory"


def _make_writable(path: Path, what: str, advice: str) -> None:
    with _refused(what, "cannot create it", advice):
        path.mkdir(parents=True, exist_ok=True)
    # A directory may exist and still refuse files (read-only, /proc, a full disk): find
    # out now rather than from inside the run.
    with _refused(what, "cannot write in it", advice), tempfile.TemporaryFile(dir=path):
        pass


@contextlib.contextmanager
def _refused(what: str, doing: str, advice: str) -> Iterator[None]:
    """An ``OSError`` from checking or creating the log directory is a usage error naming
    it. Only around those steps: an ``OSError`` anywhere else is not the user's path."""
    try:
        yield
    except OSError as exc:
        raise UsageError(f"{what}: {doing} ({exc.strerror or exc}); {advice}") from None
