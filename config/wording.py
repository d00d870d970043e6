"""How a message counts and lists things, the same in every message of every front end.

Here in ``config`` because the resolver's and the validator's messages need it, and
``config`` imports nothing above it; the UI's messages use it from here too.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["listed", "plural", "usd"]


def plural(n: int, noun: str) -> str:
    """``1 agent``, ``2 agents``, ``1,000 agents``."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def listed(items: Sequence[str], shown: int = 5) -> str:
    """``a, b, c`` or ``a, b, c, d, e and 7 more``: one short line at any count."""
    head = ", ".join(items[:shown])
    return head + (f" and {len(items) - shown:,} more" if len(items) > shown else "")


def usd(cost: float | None) -> str:
    """``$0.0123``, or ``-`` when nothing priced it (an unpriced backend is not free)."""
    return "-" if cost is None else f"${cost:.4f}"
