"""The ``conclave`` command. Imports only argparse at start-up; each command imports what it
needs when it runs, so ``conclave --help`` stays fast.

One small registration function per subcommand: it declares the flags and names the
handler. Exit codes live in :mod:`ui.exit_codes`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from ui.exit_codes import ExitCode

__all__ = ["build_parser", "main"]

Handler = Callable[[argparse.Namespace, argparse.ArgumentParser], int]

_EXIT_CODES_HELP = """\
exit codes: 0 completed, 1 failed (no answer), 2 usage/config error,
            3 timed out (best answer so far printed), 130 cancelled (Ctrl+C, SIGHUP),
            143 terminated (SIGTERM)"""


def _register_run(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from ui.headless.arguments import add_run_arguments

    run = sub.add_parser(
        "run",
        help="run one task headless; answer on stdout, progress on stderr",
        epilog=_EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_run_arguments(run)

    def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        from ui.headless.command import run_command

        return run_command(args)

    run.set_defaults(handler=handle)


def _register_replay(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    replay = sub.add_parser("replay", help="print a finished run's timeline from its events.jsonl")
    replay.add_argument("events", metavar="EVENTS.jsonl")
    replay.add_argument(
        "--verbose", action="store_true", help="include status changes and LLM calls"
    )

    def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        from ui.replay import replay_command

        return replay_command(args.events, verbose=args.verbose)

    replay.set_defaults(handler=handle)


def _register_validate(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    validate = sub.add_parser("validate", help="check a config file and exit")
    validate.add_argument("config", metavar="CONFIG")

    def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        from ui.headless.validate import validate_command

        return validate_command(args.config)

    validate.set_defaults(handler=handle)


def _register_bench(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from benchmarks.bench_args import add_bench_arguments

    bench = sub.add_parser(
        "bench", help="load benchmarks of many parallel agents (tables on stdout, JSON file)"
    )
    add_bench_arguments(bench)

    def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        from benchmarks.load_bench import main as bench_main

        return bench_main(args=args)

    bench.set_defaults(handler=handle)


_COMMANDS = (_register_run, _register_replay, _register_validate, _register_bench)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("conclave")
    except PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="conclave",
        description="Several LLM agents attack one task in parallel, see each other's answers, "
        "vote, and the winner presents the final answer.",
        epilog="`conclave -p TASK` and `echo TASK | conclave` are short for `conclave run TASK`.\n"
        + _EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"conclave {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for register in _COMMANDS:
        register(sub)
    return parser


def _normalise(argv: list[str]) -> list[str]:
    """``-p TASK`` and a bare piped task become ``run``."""
    commands = {"run", "replay", "validate", "bench", "-h", "--help", "--version"}
    if argv and argv[0] in commands:
        return argv
    if "-p" in argv or "--print" in argv:
        return ["run", *[a for a in argv if a not in ("-p", "--print")]]
    if not sys.stdin.isatty() or argv:
        return ["run", *argv]
    return argv


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _dispatch(argv)
    except BrokenPipeError:
        # The reader of stdout left (``| head``): say nothing more, and point stdout at
        # /dev/null so Python's exit-time flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitCode.OK


def _dispatch(argv: Sequence[str] | None) -> int:
    args_list = _normalise(list(sys.argv[1:] if argv is None else argv))
    parser = build_parser()
    args = parser.parse_args(args_list)
    from runtime.gc_tuning import tune_gc_for_actors

    tune_gc_for_actors()
    handler: Handler | None = getattr(args, "handler", None)
    if handler is not None:
        return handler(args, parser)
    parser.print_help(sys.stderr)
    print(
        "\nconclave: the interactive REPL is not built yet; run a task with `conclave run TASK`.",
        file=sys.stderr,
    )
    return ExitCode.USAGE


if __name__ == "__main__":
    raise SystemExit(main())
