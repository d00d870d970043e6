"""Every tool an agent may be offered, in the order they are offered."""

from __future__ import annotations

from actors.tools.spec import ToolSpec

__all__ = ["ALL_TOOLS"]

ALL_TOOLS: tuple[ToolSpec, ...] = ()
