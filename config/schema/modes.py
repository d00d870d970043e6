"""The mode enums: which agents run (agent mode) and how they work (collaboration mode).

They live in the schema because the config names them (a top-level ``mode:`` sets the
REPL's and a run's starting collaboration mode); :mod:`config.modes` turns mode state into
overrides.
"""

from __future__ import annotations

import enum

__all__ = ["AgentMode", "CollaborationMode"]


class AgentMode(enum.Enum):
    SINGLE = "single"
    MULTI = "multi"


class CollaborationMode(enum.Enum):
    DEFAULT = "default"
    PLAN = "plan"
    EXECUTE = "execute"
