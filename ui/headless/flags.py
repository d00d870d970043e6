"""``conclave run``'s flags resolved into a task, a config and a log dir.

Kept apart from the driver so that every front end that takes these flags (the REPL's
``/mode`` and start-up flags, batch defaults) resolves them the same way.
"""

from __future__ import annotations

import argparse
import secrets
import sys
import time
from pathlib import Path
from typing import Any

import attrs

from config.loader import ConfigError, load_config
from config.modes import AgentMode, ModeState, apply_modes
from config.schema import ConclaveConfig, FinalAnswerStrategy, InFlightPolicy, default_config
from ui.headless.result import plural

__all__ = [
    "MAX_ALL_TO_ALL",
    "ConfigError",
    "UsageError",
    "resolve_config",
    "resolve_log_dir",
    "resolve_task",
]


class UsageError(Exception):
    """A flag or its value is wrong; the message names the flag and what to do."""


def resolve_task(args: argparse.Namespace) -> str:
    task: str | None = args.task
    if task is None and not sys.stdin.isatty():
        task = sys.stdin.read()
    if task is None or not task.strip():
        raise UsageError("no task given: pass TASK, use -p TASK, or pipe it on stdin")
    return task.strip()


def resolve_config(args: argparse.Namespace) -> ConclaveConfig:
    if args.config is not None:
        if args.agents is not None:
            raise UsageError(
                "--agents applies only to the default scripted agents; drop it or --config"
            )
        config = load_config(args.config)
    else:
        config = default_config(args.agents or 3)
    changes: dict[str, Any] = {}
    if args.visibility is not None:
        changes["visibility"] = args.visibility
    if args.in_flight_policy is not None:
        changes["in_flight_policy"] = InFlightPolicy(args.in_flight_policy)
    if args.timeout is not None:
        changes["run_timeout"] = args.timeout
    config = attrs.evolve(config, orchestrator=attrs.evolve(config.orchestrator, **changes))
    if args.agent is not None and args.agent_mode != "single":
        raise UsageError("--agent picks the agent of single mode; add --agent-mode single")
    state = ModeState(
        agent_mode=AgentMode(args.agent_mode),
        active_agent=args.agent,
        refinement=args.refinement == "on",
    )
    try:
        config = apply_modes(config, state)
    except ValueError as exc:
        raise UsageError(f"--agent: {exc}") from None
    # An explicit strategy flag wins over the mode table's default for refinement off.
    if args.final_answer_strategy is not None:
        strategy = FinalAnswerStrategy(args.final_answer_strategy)
        config = attrs.evolve(
            config, orchestrator=attrs.evolve(config.orchestrator, final_answer_strategy=strategy)
        )
    agents = len(config.agents)
    if config.orchestrator.visibility == "all" and agents > MAX_ALL_TO_ALL:
        raise UsageError(
            f"visibility 'all' with {agents} agents would send every answer to every agent "
            f"(~{agents * agents:,} updates); it is limited to {MAX_ALL_TO_ALL} agents. "
            "Use --visibility ring or --visibility islands:K"
        )
    if args.config is None:
        print(
            f"conclave: no --config given; running {plural(agents, 'scripted agent')} "
            "(offline, no API key needed)",
            file=sys.stderr,
        )
    return config


MAX_ALL_TO_ALL = 256


def resolve_log_dir(given: str | None) -> Path:
    if given is not None:
        path = Path(given)
        if (path / "events.jsonl").exists():
            raise UsageError(
                f"--log-dir {path} already holds a run (events.jsonl); choose a new directory"
            )
    else:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = Path(".conclave") / "runs" / f"{stamp}-{secrets.token_hex(3)}"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"--log-dir {path}: cannot create it ({exc.strerror or exc}); pass a writable directory"
        ) from None
    return path
