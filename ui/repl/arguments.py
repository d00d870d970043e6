"""``conclave repl``'s flags (also taken by a bare ``conclave`` in a terminal, and by
``conclave --config x.yaml`` or any other line of them without a task): the shared run flags
(:func:`config.flags.add_run_flags`) and where the turns' logs go. Only argparse here:
registering the command must stay cheap so that ``conclave --help`` starts fast."""

from __future__ import annotations

import argparse

from conclave.config.flags import add_run_flags
from conclave.ui.session_flags import add_session_flags

__all__ = ["add_repl_arguments"]


def add_repl_arguments(p: argparse.ArgumentParser) -> None:
    add_run_flags(
        p,
        help={
            "agent": "in single mode, which agent runs first (the tabs change it)",
            "mode": "the collaboration mode to start in (Shift+Tab and /mode change it)",
            "timeout": "each turn's whole-run timeout",
        },
    )
    p.add_argument(
        "--log-dir",
        metavar="DIR",
        help="where each turn's run directory goes (default: .conclave/runs)",
    )
    add_session_flags(p, picker=True)
