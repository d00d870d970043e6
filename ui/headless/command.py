"""``conclave run``: one headless run with signal handling.

The answer goes to stdout, progress to stderr; ``json`` prints one object, ``stream-json``
one event per line ending with a ``result`` event. Ctrl+C ends the run with the best answer
so far and exit code 130; the event log is complete up to that point.
"""

from __future__ import annotations

import argparse
import signal
import sys

import trio

from actors.run.driver import RunHandle, RunSpec, open_run
from actors.run.result import RunResult
from ui.exit_codes import ExitCode
from ui.headless.flags import (
    ConfigError,
    UsageError,
    resolve_config,
    resolve_log_dir,
    resolve_task,
)
from ui.headless.progress import Progress
from ui.headless.result import print_result

__all__ = ["run_command"]

_EXIT = {
    "completed": ExitCode.OK,
    "failed": ExitCode.FAILED,
    "timeout": ExitCode.TIMEOUT,
    "cancelled": ExitCode.CANCELLED,
}


def run_command(args: argparse.Namespace) -> int:
    try:
        task = resolve_task(args)
        config = resolve_config(args)
        log_dir = resolve_log_dir(args.log_dir)
    except (UsageError, ConfigError) as exc:
        print(f"conclave: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    spec = RunSpec(task=task, config=config, log_dir=log_dir)
    result = trio.run(_run, spec, args.output_format, args.verbose)
    print_result(result, args.output_format)
    if result.termination == "timeout" and result.final_answer is None:
        return ExitCode.FAILED
    return _EXIT[result.termination]


async def _run(spec: RunSpec, output_format: str, verbose: bool) -> RunResult:
    """Run once. The first Ctrl+C (or SIGTERM) ends the run with what it has; a second one
    during the shutdown that follows cancels everything at once."""
    progress = Progress(output_format, verbose, sys.stdout)
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
