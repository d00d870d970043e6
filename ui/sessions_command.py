"""``conclave sessions``: this directory's sessions, most recently used first.

Text: one row per session (id, last used, turns, first prompt) and how to resume one;
``--json``: a JSON array of objects with ``id``, ``path``, ``created_at``, ``updated_at``
(seconds since the epoch), ``first_prompt``, ``turns``, ``runs`` and ``problem`` (why it
cannot be read, or what was skipped; ``null`` when nothing).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from conclave.ui.exit_codes import ExitCode
from conclave.ui.streams import cannot_write, write_stdout

if TYPE_CHECKING:
    from conclave.actors.session.catalogue import SessionSummary

__all__ = ["add_sessions_command", "sessions_command"]

_PROMPT_WIDTH = 60


def add_sessions_command(sub: argparse._SubParsersAction[Any]) -> None:
    sessions = sub.add_parser(
        "sessions",
        help="list this directory's sessions (resume one with conclave --resume ID)",
        description="See docs/sessions.md.",
    )
    sessions.add_argument("--json", action="store_true", help="print a JSON array")

    def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        return sessions_command(as_json=args.json)

    sessions.set_defaults(handler=handle)


def sessions_command(*, as_json: bool) -> int:
    # Imported here: registering the command must not load the codec (``--help`` speed).
    from conclave.actors.session.catalogue import list_sessions
    from conclave.ui.sessions import sessions_root

    found = list_sessions(sessions_root())
    if not found and not as_json:
        print("no sessions in this directory yet; `conclave` starts one", file=sys.stderr)
        return ExitCode.OK
    why = write_stdout(_listing(found, as_json=as_json))
    if why is not None:
        return cannot_write("conclave sessions", "the list", why)
    if not as_json:
        print("\nresume one: conclave --resume ID (or conclave -c for the latest)", file=sys.stderr)
    return ExitCode.OK


def _listing(found: Sequence[SessionSummary], *, as_json: bool) -> str:
    from conclave.ui.sessions import age

    if as_json:
        return json.dumps([s.to_json() for s in found], indent=2, ensure_ascii=False)
    now = time.time()
    rows = [("ID", "LAST USED", "TURNS", "FIRST PROMPT")]
    for s in found:
        prompt = " ".join(s.first_prompt.split())
        if len(prompt) > _PROMPT_WIDTH:
            prompt = prompt[: _PROMPT_WIDTH - 1] + "…"
        if s.problem is not None and not s.turns:
            prompt = f"(unreadable: {s.problem})"
        rows.append((s.id, age(now - s.updated_at), str(s.turns), prompt))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "\n".join(
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])) + "  " + row[3]
        for row in rows
    )
