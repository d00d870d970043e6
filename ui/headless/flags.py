"""``conclave run``'s flags resolved into a task, a config and a log dir.

Kept apart from the driver so that every front end that takes these flags (the REPL's
``/mode`` and start-up flags, batch defaults) resolves them the same way.

Text that is not UTF-8 (documented in docs/exit-codes.md):

- a task (the argument, whose bad bytes Python keeps as surrogates, or stdin's bytes) is
  decoded with each bad byte replaced by U+FFFD, and stderr names the first one: a task is
  prose for a model, which reads past a replaced character, and refusing it would fail a
  run over what may be one stray byte;
- a config file is refused (exit 2) naming the byte's position (:mod:`config.loader`).
"""

from __future__ import annotations

import argparse
import secrets
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs

from conclave.actors.run.usage import price_of
from conclave.config.limits import MAX_TASK_BYTES
from conclave.config.loader import ConfigError, load_config
from conclave.config.modes import AgentMode, CollaborationMode, ModeState, apply_modes
from conclave.config.schema import (
    ConclaveConfig,
    FinalAnswerStrategy,
    InFlightPolicy,
    default_config,
)
from conclave.config.schema.context import ContextPath, parse_context_flag
from conclave.config.schema.endpoint import HttpBackendConfig
from conclave.config.validation import check_runnable
from conclave.ui.headless.result import display_path, plural

__all__ = [
    "ConfigError",
    "EmptyStdin",
    "UsageError",
    "check_priced",
    "decode_task",
    "resolve_config",
    "resolve_log_dir",
    "resolve_mode",
    "resolve_task",
    "with_model",
]


class UsageError(Exception):
    """A flag or its value is wrong; the message names the flag and what to do."""


class EmptyStdin(Exception):
    """Print mode (no task argument, stdin not a terminal) found nothing on stdin: the
    pipe that should carry the task carried none (exit 1, not a usage error: the command
    line was right, its input was not)."""

    def __init__(self) -> None:
        super().__init__(
            "Error: stdin was empty; pipe a task into it (echo TASK | conclave), "
            "or pass the task as an argument"
        )


def resolve_task(args: argparse.Namespace) -> str:
    """The task from the argument or, without one, from stdin (when stdin is not a terminal:
    print mode; an empty or blank stdin raises :class:`EmptyStdin`)."""
    raw: bytes | None = None
    if args.task is not None:
        raw = _argument_bytes(args.task)
    elif sys.stdin is not None and not sys.stdin.isatty():
        raw = _read_stdin()
        if not raw.strip():
            raise EmptyStdin
    if raw is not None and len(raw) > MAX_TASK_BYTES:
        raise UsageError(
            f"the task is larger than {MAX_TASK_BYTES // 1_048_576} MiB; "
            "pass a shorter task (a file's path or an excerpt, not the whole file)"
        )
    task = decode_task(raw) if raw is not None else None
    if task is None or not task.strip():
        raise UsageError("no task given: pass TASK, use -p TASK, or pipe it on stdin")
    return task.strip()


def _argument_bytes(task: str) -> bytes:
    """The bytes the user typed: Python decodes argv with ``surrogateescape``, keeping each
    byte that is not UTF-8 as a lone surrogate (``surrogatepass`` covers a str from code)."""
    try:
        return task.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return task.encode("utf-8", "surrogatepass")


def _read_stdin() -> bytes:
    """At most one byte more than a task may hold, so ``< /dev/zero`` cannot fill memory."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # replaced by a text-only stream (tests, embedding)
        return str(sys.stdin.read(MAX_TASK_BYTES + 1)).encode("utf-8", "surrogateescape")
    data: bytes = buffer.read(MAX_TASK_BYTES + 1)
    return data


def decode_task(raw: bytes) -> str:
    """UTF-8, with each byte that is not replaced by U+FFFD; stderr names the first one."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        print(
            f"conclave: the task is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at position "
            f"{exc.start}); each invalid byte was replaced with U+FFFD",
            file=sys.stderr,
        )
        return raw.decode("utf-8", "replace")


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
    if args.context:
        changes["context_paths"] = config.orchestrator.context_paths + _context_flags(args.context)
    config = attrs.evolve(config, orchestrator=attrs.evolve(config.orchestrator, **changes))
    if args.model is not None:
        config = with_model(config, args.model)
    if args.max_cost is not None:
        check_priced(config)
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
    # The same checks ``conclave validate`` makes, on the config as the run will use it.
    check_runnable(config, source=args.config)
    if args.config is not None:
        from conclave.ui.headless.validate import check_some_agent_has_a_key

        check_some_agent_has_a_key(config, source=args.config)
    if args.config is None:
        print(
            f"conclave: no --config given; running {plural(len(config.agents), 'scripted agent')} "
            "(offline, no API key needed)",
            file=sys.stderr,
        )
    return config


def resolve_mode(args: argparse.Namespace) -> CollaborationMode:
    """``--mode``: the run's collaboration mode (the flag has checked the name)."""
    return CollaborationMode(args.mode)


def _context_flags(values: list[str]) -> tuple[ContextPath, ...]:
    try:
        return tuple(parse_context_flag(value) for value in values)
    except ValueError as exc:
        raise UsageError(f"--context: {exc}") from None


def with_model(config: ConclaveConfig, model: str) -> ConclaveConfig:
    """``--model``: every agent that talks to a model uses ``model`` (scripted agents have
    none and are left as they are)."""
    if not any(isinstance(agent.backend, HttpBackendConfig) for agent in config.agents):
        raise UsageError(
            "--model: no agent in this config talks to a model (every backend is scripted); "
            "drop --model, or pass a --config with openai or anthropic agents"
        )
    agents = tuple(
        attrs.evolve(agent, backend=attrs.evolve(agent.backend, model=model))
        if isinstance(agent.backend, HttpBackendConfig)
        else agent
        for agent in config.agents
    )
    return attrs.evolve(config, agents=agents)


def check_priced(config: ConclaveConfig) -> None:
    """``--max-cost`` counts the calls of agents whose backend has a ``price``: refuse a
    budget nothing counts against, and say which agents it does not cover."""
    unpriced = [agent.id for agent in config.agents if price_of(agent) is None]
    if len(unpriced) == len(config.agents):
        raise UsageError(
            "--max-cost: no agent's backend has a price, so nothing would count against the "
            "budget; add price: {input_per_mtok: ..., output_per_mtok: ...} to the openai or "
            "anthropic backend sections, or drop --max-cost"
        )
    if unpriced:
        more = len(unpriced) - 5
        shown = ", ".join(unpriced[:5]) + (f" and {more:,} more" if more > 0 else "")
        print(
            "conclave: --max-cost counts only priced calls; the calls of "
            f"{plural(len(unpriced), 'agent')} without a price ({shown}) are not counted",
            file=sys.stderr,
        )


def resolve_log_dir(given: str | None) -> Path:
    """The run's log directory, created and known to be writable, with no log in it yet.

    Messages name ``--log-dir`` only when the user gave it: a problem with the default
    directory is not a problem with a flag they never typed.
    """
    if given is not None:
        if not given.strip():
            raise UsageError("--log-dir is empty; pass the directory for the run's event log")
        path = Path(given)
        what = f"--log-dir {display_path(path)}"
        advice = "pass a writable directory"
    else:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = Path(".conclave") / "runs" / f"{stamp}-{secrets.token_hex(3)}"
        what = f"the run's log directory {display_path(path)}"
        advice = "run conclave from a writable directory"
    log = path / "events.jsonl"
    if log.is_symlink() or log.exists():
        raise UsageError(f"{what} already holds a run (events.jsonl); choose a new directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{what}: cannot create it ({exc.strerror or exc}); {advice}") from None
    try:
        # A directory may exist and still refuse files (read-only, /proc, a full disk):
        # find out now rather than from inside the run.
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise UsageError(f"{what}: cannot write in it ({exc.strerror or exc}); {advice}") from None
    return path
