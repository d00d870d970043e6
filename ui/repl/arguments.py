"""``conclave repl``'s flags (also taken by a bare ``conclave`` in a terminal). Only argparse
here: registering the command must stay cheap so that ``conclave --help`` starts fast."""

from __future__ import annotations

import argparse

from conclave.config.limits import MAX_AGENTS
from conclave.ui.headless.arguments import collaboration_mode

__all__ = ["add_repl_arguments"]


def _agent_count(text: str) -> int:
    expected = f"a whole number >= 1 and <= {MAX_AGENTS:,}"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not 1 <= value <= MAX_AGENTS:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {value}")
    return value


def _visibility(text: str) -> str:
    import re

    if not re.fullmatch(r"all|ring|islands:[1-9][0-9]{0,8}", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not one of: all, ring, islands:K (K >= 1)")
    return text


def add_repl_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="PATH", help="YAML config (default: three scripted agents)")
    p.add_argument(
        "--agents", type=_agent_count, metavar="N", help="number of scripted agents (no --config)"
    )
    p.add_argument("--agent-mode", choices=("single", "multi"), default="multi")
    p.add_argument(
        "--agent", metavar="ID", help="in single mode, which agent runs (default: the first)"
    )
    p.add_argument("--refinement", choices=("on", "off"), default="on")
    p.add_argument("--visibility", type=_visibility, metavar="all|ring|islands:K")
    p.add_argument(
        "--mode",
        type=collaboration_mode,
        default="default",
        metavar="default|plan|execute",
        help="the collaboration mode to start in (Shift+Tab and /mode change it)",
    )
    p.add_argument(
        "--log-dir",
        metavar="DIR",
        help="where each turn's run directory goes (default: .conclave/runs)",
    )
