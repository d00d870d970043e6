"""``conclave run``'s flags. Only argparse here: registering the command must stay cheap so
that ``conclave --help`` starts fast; :mod:`ui.headless.flags` resolves the values."""

from __future__ import annotations

import argparse
import math

from conclave.config.limits import MAX_AGENTS, MAX_TIMEOUT_S

__all__ = ["MODES", "add_run_arguments", "collaboration_mode"]


def _agent_count(text: str) -> int:
    expected = f"a whole number >= 1 and <= {MAX_AGENTS:,}"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not 1 <= value <= MAX_AGENTS:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {value}")
    return value


def _timeout(text: str) -> float:
    expected = f"a finite number of seconds > 0 and <= {MAX_TIMEOUT_S:.0f}"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not math.isfinite(value) or not 0 < value <= MAX_TIMEOUT_S:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def _dollars(text: str) -> float:
    expected = "a number of dollars > 0, such as 0.50"
    try:
        value = float(text.removeprefix("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def _model(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a model name such as gpt-4o-mini, got ''")
    return text


def _visibility(text: str) -> str:
    import re

    if not re.fullmatch(r"all|ring|islands:[1-9][0-9]{0,8}", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not one of: all, ring, islands:K (K >= 1)")
    return text


MODES = ("default", "plan", "execute")
"""The collaboration modes (config.modes.CollaborationMode's values, spelled here so that
registering the flag imports no config)."""


def collaboration_mode(text: str) -> str:
    """``--mode``'s value (also the REPL's ``/mode``): one of :data:`MODES`."""
    if text not in MODES:
        raise argparse.ArgumentTypeError(f'invalid mode "{text}". Valid modes: {", ".join(MODES)}')
    return text


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", nargs="?", help="the task; read from stdin when omitted and piped")
    p.add_argument("--config", metavar="PATH", help="YAML config (default: three scripted agents)")
    p.add_argument(
        "--agents", type=_agent_count, metavar="N", help="number of scripted agents (no --config)"
    )
    p.add_argument("--agent-mode", choices=("single", "multi"), default="multi")
    p.add_argument(
        "--agent", metavar="ID", help="in single mode, which agent runs (default: the first)"
    )
    p.add_argument("--refinement", choices=("on", "off"), default="on")
    p.add_argument(
        "--mode",
        type=collaboration_mode,
        default="default",
        metavar="default|plan|execute",
        help="plan: the agents investigate read-only and answer with a plan (saved under the "
        "log dir); execute: they work autonomously, recording their assumptions",
    )
    p.add_argument(
        "--final-answer-strategy", choices=("winner_reuse", "winner_present", "synthesize")
    )
    p.add_argument("--visibility", type=_visibility, metavar="all|ring|islands:K")
    p.add_argument(
        "--context",
        action="append",
        metavar="PATH[:w]",
        help="a file or directory the agents may read (gives them file tools); PATH:w lets the "
        "final presentation write it; repeatable",
    )
    p.add_argument(
        "--in-flight-policy",
        choices=("cancel", "finish", "inject"),
        help="what new answers do to a round in flight (inject: rounds with tools only; "
        "a round without tools finishes)",
    )
    p.add_argument("--output-format", choices=("text", "json", "stream-json"), default="text")
    p.add_argument(
        "--include-partial-messages",
        action="store_true",
        help="with stream-json, also stream partial (ephemeral) events such as text deltas",
    )
    p.add_argument(
        "--log-dir", metavar="DIR", help="where events.jsonl goes (default: .conclave/runs/<id>)"
    )
    p.add_argument("--timeout", type=_timeout, metavar="SECONDS", help="whole-run timeout")
    p.add_argument(
        "--max-cost",
        type=_dollars,
        metavar="USD",
        help="halt the run like a timeout once its calls cost this much (from the backends' "
        "price: in the config)",
    )
    p.add_argument(
        "--model",
        type=_model,
        metavar="NAME",
        help="use this model for every openai/anthropic agent, for this run only",
    )
    p.add_argument(
        "--verbose", action="store_true", help="show every agent status change on stderr"
    )
