"""Headless runs: ``conclave run``, ``conclave -p``, ``echo TASK | conclave``.

The answer goes to stdout, progress to stderr; ``json`` prints one object, ``stream-json``
one event per line ending with a ``result`` event. Ctrl+C ends the run with the best answer
so far and exit code 130; the event log is complete up to that point.
"""

from __future__ import annotations

import argparse
import json
import secrets
import signal
import sys
import time
from pathlib import Path
from typing import Any, TextIO

import attrs
import trio

from actors.events import DomainEvent
from actors.run.driver import RunHandle, RunSpec, open_run
from actors.run.events import RunEnded
from actors.run.result import RunResult
from config.loader import ConfigError, load_config
from config.modes import AgentMode, ModeState, apply_modes
from config.schema import ConclaveConfig, FinalAnswerStrategy, InFlightPolicy, default_config
from runtime import Event, encode
from ui.cli import EXIT_CANCELLED, EXIT_FAILED, EXIT_OK, EXIT_TIMEOUT, EXIT_USAGE
from ui.timeline import describe

__all__ = ["run_command", "validate_command"]

_EXIT = {
    "completed": EXIT_OK,
    "failed": EXIT_FAILED,
    "timeout": EXIT_TIMEOUT,
    "cancelled": EXIT_CANCELLED,
}


class UsageError(Exception):
    pass


def run_command(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    try:
        task = _task(args)
        config = _config(args)
        log_dir = _log_dir(args.log_dir)
    except (UsageError, ConfigError) as exc:
        print(f"conclave: {exc}", file=sys.stderr)
        return EXIT_USAGE
    spec = RunSpec(task=task, config=config, log_dir=log_dir)
    result = trio.run(_run, spec, args.output_format, args.verbose)
    _print_result(result, args.output_format)
    if result.termination == "timeout" and result.final_answer is None:
        return EXIT_FAILED
    return _EXIT[result.termination]


def validate_command(path: str) -> int:
    try:
        config = load_config(path)
    except ConfigError as exc:
        print(f"conclave: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(f"{path}: ok ({len(config.agents)} agents: {', '.join(a.id for a in config.agents)})")
    return EXIT_OK


def _task(args: argparse.Namespace) -> str:
    task: str | None = args.task
    if task is None and not sys.stdin.isatty():
        task = sys.stdin.read()
    if task is None or not task.strip():
        raise UsageError("no task given: pass TASK, use -p TASK, or pipe it on stdin")
    return task.strip()


def _config(args: argparse.Namespace) -> ConclaveConfig:
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
            f"conclave: no --config given; running {_count(agents, 'scripted agent')} "
            "(offline, no API key needed)",
            file=sys.stderr,
        )
    return config


MAX_ALL_TO_ALL = 256


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _log_dir(given: str | None) -> Path:
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


class _Progress:
    """Prints domain events as they happen: lines on stderr, or JSON lines on stdout.

    Falls silent once the run has ended (shutdown chatter is in the log, not the terminal)
    and when the reader of stdout goes away (``| head``).
    """

    def __init__(self, output_format: str, verbose: bool, stream: TextIO) -> None:
        self._origin: float | None = None
        self._ended = False
        self.format = output_format
        self.verbose = verbose
        self.stream = stream

    def record(self, event: Event) -> None:
        if self._ended:
            return
        self._ended = isinstance(event, RunEnded)
        try:
            self._show(event)
        except BrokenPipeError:
            self._ended = True

    def _show(self, event: Event) -> None:
        if self.format == "stream-json":
            if isinstance(event, DomainEvent) or self.verbose:
                data = encode(event)
                record = {"type": data.pop("kind"), **data}
                self.stream.write(json.dumps(record, ensure_ascii=False) + "\n")
                self.stream.flush()
            return
        if self._origin is None:
            self._origin = event.at
        line = describe(event, verbose=self.verbose)
        if line is not None:
            print(f"[{event.at - self._origin:6.2f}s] {line}", file=sys.stderr, flush=True)


async def _run(spec: RunSpec, output_format: str, verbose: bool) -> RunResult:
    """Run once. The first Ctrl+C (or SIGTERM) ends the run with what it has; a second one
    during the shutdown that follows cancels everything at once."""
    progress = _Progress(output_format, verbose, sys.stdout)
    taps = [progress] if output_format != "json" or verbose else []
    handle: RunHandle | None = None
    result: RunResult | None = None
    hard_stop = trio.CancelScope()
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:

            async def on_signals() -> None:
                async for _ in signals:
                    if handle is not None and result is None:
                        handle.cancel()
                    else:
                        hard_stop.cancel()

            nursery.start_soon(on_signals)
            with hard_stop:
                async with open_run(spec, taps=taps) as handle:
                    result = await handle.result()
            nursery.cancel_scope.cancel()
    if result is None:
        assert handle is not None
        result = handle.snapshot("cancelled")
    return result


def _print_result(result: RunResult, output_format: str) -> None:
    data = result.to_json()
    if output_format == "json":
        print(json.dumps(data, ensure_ascii=False, indent=2))
    elif output_format == "stream-json":
        print(json.dumps({"type": "result", **data}, ensure_ascii=False))
    else:
        if result.final_answer is not None:
            print(result.final_answer)
        summary = (
            f"{result.termination}: winner {result.winner or '-'}, "
            f"{_count(len(result.answers), 'answer')}, {_count(result.llm_calls, 'LLM call')}, "
            f"{_count(result.restarts, 'restart')}, {result.duration_s:.2f}s; "
            f"log {result.log_dir}/events.jsonl"
        )
        print(summary, file=sys.stderr)
        if result.final_answer is None:
            print("conclave: the run produced no answer", file=sys.stderr)
