"""Every tool an agent may be offered, in the order they are offered."""

from __future__ import annotations

from conclave.actors.tools.files import (
    DELETE_FILE,
    EDIT_FILE,
    LIST_DIRECTORY,
    READ_FILE,
    WRITE_FILE,
)
from conclave.actors.tools.search import GLOB, SEARCH
from conclave.actors.tools.shell import RUN_SHELL
from conclave.actors.tools.spec import ToolSpec

__all__ = ["ALL_TOOLS", "READ_ONLY_TOOLS", "WRITE_TOOLS"]

READ_ONLY_TOOLS: tuple[ToolSpec, ...] = (READ_FILE, LIST_DIRECTORY, GLOB, SEARCH)
WRITE_TOOLS: tuple[ToolSpec, ...] = (WRITE_FILE, EDIT_FILE, DELETE_FILE, RUN_SHELL)
ALL_TOOLS: tuple[ToolSpec, ...] = READ_ONLY_TOOLS + WRITE_TOOLS
