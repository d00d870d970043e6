"""Writing a command's tables to stdout, when stdout may not take them: closed before the
command started (``>&-``: :mod:`ui.streams` stands in for it), full (``> /dev/full``), or
read by a reader that went away (``| head``). ``conclave batch`` and ``conclave report``
say the first two on stderr and exit 1, as ``conclave run`` does for its result; the third
is no error."""

from __future__ import annotations

import sys

from conclave.ui.streams import discard_stdout, stdout_is_closed

__all__ = ["write_stdout"]


def write_stdout(text: str) -> str | None:
    """Write ``text`` and a newline to stdout, and flush; why stdout could not take it
    (``"it is closed"``, the OS's reason), or ``None``: written, or its reader left (then
    stdout points at /dev/null, so Python's flush at exit does not fail again)."""
    if stdout_is_closed():
        return "it is closed"
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        discard_stdout()
    except OSError as exc:
        discard_stdout()
        return str(exc.strerror or exc)
    return None
