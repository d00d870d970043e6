"""Upper bounds on what a config or a flag may ask for, in one place.

A dependency-free module: ``conclave run``'s flag parsing imports it, and ``conclave --help``
must stay fast. Each bound is far past any sensible run and well short of a value that would
hang a run or exhaust memory; a value past it is refused with the bound in the message.
"""

from __future__ import annotations

__all__ = [
    "MAX_AGENTS",
    "MAX_ALL_TO_ALL",
    "MAX_ANSWERS",
    "MAX_CONFIG_BYTES",
    "MAX_LATENCY_S",
    "MAX_PREVIEW_CHARS",
    "MAX_QUIET_PERIOD_S",
    "MAX_TASK_BYTES",
    "MAX_TIMEOUT_S",
    "MAX_TRIES",
    "MAX_YAML_ALIAS_NODES",
    "MAX_YAML_DEPTH",
]

MAX_AGENTS = 100_000
"""Agents in one run (about 25 KB of memory each on the scripted backend)."""
MAX_ALL_TO_ALL = 256
"""Agents past which ``visibility: all`` is refused: every answer goes to every agent, so the
updates of a run grow with the square of the agents."""
MAX_ANSWERS = 1_000
"""Answers per agent (a scripted agent's ``answers``, ``max_new_answers_per_agent``)."""
MAX_TRIES = 100
"""Tries per round (``max_tries_per_round``)."""
MAX_STEPS = 10_000
"""LLM calls per round (``max_steps_per_round``)."""
MAX_PREVIEW_CHARS = 1_000_000
"""Characters of a peer's answer shown in an update (``answer_preview_chars``)."""
MAX_LATENCY_S = 3_600.0
"""Seconds per scripted LLM call."""
MAX_QUIET_PERIOD_S = 60.0
"""Seconds the bus may wait for answers to go quiet before it delivers held updates."""
MAX_TIMEOUT_S = 7 * 24 * 3_600.0
"""Seconds of a run or round timeout (a week)."""
MAX_TASK_BYTES = 1_048_576
"""Bytes of a task (argument or stdin): past any model's context window."""
MAX_CONFIG_BYTES = 16 * 1_048_576
"""Bytes of a config file."""
MAX_YAML_ALIAS_NODES = 100_000
"""Nodes that YAML aliases (``*name``) may add to a config beyond those written out; an
"alias bomb" of nested aliases would otherwise expand to billions."""
MAX_YAML_DEPTH = 64
"""Levels of nesting in a config file (a config uses four)."""
