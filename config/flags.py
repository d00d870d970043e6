"""The run flags every front end shares, registered on a parser by one function.

``conclave run``, ``conclave batch``, the REPL and ``conclave serve`` take the same flags for
what their runs use — the config file, the scripted default's size, the modes, and the
flags that edit the config for a run — with the same value checks and messages.
:class:`config.resolver.RunFlags` reads what they say, and :func:`config.resolver.resolve`
resolves it. Only argparse here: registering a command must stay cheap, so that
``conclave --help`` starts fast.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Mapping

from conclave.config.limits import MAX_AGENTS, MAX_TIMEOUT_S

__all__ = [
    "AGENT_MODES",
    "IN_FLIGHT_POLICIES",
    "LOOPS",
    "MODES",
    "PERMISSION_MODES",
    "STRATEGIES",
    "add_run_flags",
    "agent_count",
    "collaboration_mode",
    "dollars",
    "model_name",
    "timeout",
    "visibility",
]

MODES = ("default", "plan", "execute")
"""The collaboration modes (:class:`config.modes.CollaborationMode`'s values, spelled here so
that registering the flag imports nothing else)."""
AGENT_MODES = ("single", "multi")
STRATEGIES = ("winner_reuse", "winner_present", "synthesize")
IN_FLIGHT_POLICIES = ("cancel", "finish", "inject")
PERMISSION_MODES = ("ask", "accept-edits", "bypass")
""":class:`config.schema.permissions.PermissionMode`'s values."""
LOOPS = ("free", "paor")
"""How answer rounds run (:class:`config.schema.paor.LoopKind`'s values)."""


def agent_count(text: str) -> int:
    expected = f"a whole number >= 1 and <= {MAX_AGENTS:,}"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not 1 <= value <= MAX_AGENTS:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {value}")
    return value


def timeout(text: str) -> float:
    expected = f"a finite number of seconds > 0 and <= {MAX_TIMEOUT_S:.0f}"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not math.isfinite(value) or not 0 < value <= MAX_TIMEOUT_S:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def dollars(text: str) -> float:
    expected = "a number of dollars > 0, such as 0.50"
    try:
        value = float(text.removeprefix("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def model_name(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a model name such as gpt-4o-mini, got ''")
    return text


def visibility(text: str) -> str:
    if not re.fullmatch(r"all|ring|islands:[1-9][0-9]{0,8}", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not one of: all, ring, islands:K (K >= 1)")
    return text


def collaboration_mode(text: str) -> str:
    """``--mode``'s value (also the REPL's ``/mode``): one of :data:`MODES`."""
    if text not in MODES:
        raise argparse.ArgumentTypeError(f'invalid mode "{text}". Valid modes: {", ".join(MODES)}')
    return text


_HELP = {
    "config": "YAML config (default: ./.conclave/config.yaml, else your user config "
    "~/.config/conclave/config.yaml, else three scripted agents)",
    "agents": "number of scripted agents (no --config; the scripted default even where a "
    "config file would be found)",
    "agent": "in single mode, which agent runs (default: the first)",
    "mode": "plan: the agents investigate read-only and answer with a plan (saved under the "
    "log dir); execute: they work autonomously, recording their assumptions",
    "context": "a file or directory the agents may read (gives them file tools); PATH:w lets "
    "the final presentation write it; repeatable",
    "in_flight_policy": "what new answers do to a round in flight (inject: rounds with tools "
    "only; a round without tools finishes)",
    "timeout": "a run's whole-run timeout",
    "permission_mode": "what asks before it runs: ask (every write, delete and shell "
    "command), accept-edits (file writes proceed; deletes and shell commands ask), bypass "
    "(nothing asks); over the config's permissions.mode",
    "loop": "how every agent's answer rounds run: free (one tool loop) or paor (plan, act, "
    "observe, reflect in iterations; docs/paor.md)",
    "model": "use this model for every openai/anthropic agent (the config file is unchanged)",
}


def add_run_flags(
    p: argparse.ArgumentParser, *, modes: bool = True, help: Mapping[str, str] | None = None
) -> None:
    """Register the shared run flags on ``p``. ``modes=False`` leaves out the mode flags
    (``--agent-mode``, ``--agent``, ``--refinement``, ``--mode``), for a front end whose
    runs each name their own (``conclave serve``: a client's ``start_run``). ``help``
    replaces a flag's help text by its destination name (``mode``, ``timeout``), where a
    front end gives the flag a narrower meaning (the REPL's starting mode)."""
    text = {**_HELP, **(help or {})}
    p.add_argument("--config", metavar="PATH", help=text["config"])
    p.add_argument("--agents", type=agent_count, metavar="N", help=text["agents"])
    if modes:
        # Not given (None) reads as multi and on; a resumed session's own modes win over
        # what was not given.
        p.add_argument("--agent-mode", choices=AGENT_MODES, default=None)
        p.add_argument("--agent", metavar="ID", help=text["agent"])
        p.add_argument("--refinement", choices=("on", "off"), default=None)
        p.add_argument(
            "-m",  # as Claude Code's and Codex's users reach for; no command has another -m
            "--mode",
            type=collaboration_mode,
            default=None,  # not given: the config's mode:, else default
            metavar="default|plan|execute",
            help=text["mode"],
        )
    p.add_argument("--final-answer-strategy", choices=STRATEGIES)
    p.add_argument("--visibility", type=visibility, metavar="all|ring|islands:K")
    p.add_argument("--context", action="append", metavar="PATH[:w]", help=text["context"])
    p.add_argument("--in-flight-policy", choices=IN_FLIGHT_POLICIES, help=text["in_flight_policy"])
    p.add_argument("--loop", choices=LOOPS, help=text["loop"])
    p.add_argument("--timeout", type=timeout, metavar="SECONDS", help=text["timeout"])
    p.add_argument("--model", type=model_name, metavar="NAME", help=text["model"])
    p.add_argument("--permission-mode", choices=PERMISSION_MODES, help=text["permission_mode"])
