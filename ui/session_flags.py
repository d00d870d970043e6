"""``-c``/``--continue`` and ``--resume [ID]``: only argparse here, so registering the
commands that take them stays cheap (``conclave --help`` starts fast)."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["PICK", "SESSIONS_ROOT", "add_session_flags"]

SESSIONS_ROOT = Path(".conclave") / "sessions"
"""This directory's sessions (:data:`actors.session.store.SESSIONS_DIR`, named here without
loading the codec, for the REPL's start-up)."""

PICK = ""
"""``--resume`` without an id: the REPL shows the picker."""


def add_session_flags(p: argparse.ArgumentParser, *, picker: bool) -> None:
    """``-c``/``--continue`` and ``--resume [ID]`` (the id optional only where a picker can
    be shown: the REPL)."""
    group = p.add_mutually_exclusive_group()
    group.add_argument(
        "-c",
        "--continue",
        dest="continue_session",
        action="store_true",
        help="go on with this directory's latest session (its history and modes)",
    )
    if picker:
        group.add_argument(
            "--resume",
            nargs="?",
            const=PICK,
            metavar="ID",
            help="go on with session ID (`conclave sessions` lists them); without ID, pick one",
        )
    else:
        group.add_argument(
            "--resume",
            metavar="ID",
            help="add this turn to session ID (`conclave sessions` lists them)",
        )
