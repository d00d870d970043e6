"""Text any terminal takes, for every front end's messages."""

from __future__ import annotations

import os

__all__ = ["display_path"]


def display_path(path: str | os.PathLike[str]) -> str:
    """A path as text any terminal takes: a byte that is not UTF-8 shown as ``\\xNN``."""
    raw = os.fsencode(path)
    return raw.decode("utf-8", "backslashreplace")
