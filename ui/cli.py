"""The ``conclave`` command. Imports only argparse at start-up; each command imports what it
needs, so ``conclave --help`` stays fast.

Exit codes: 0 completed; 1 the run failed (no answer at all); 2 usage or config error;
3 the run timed out (the best answer so far is printed); 130 cancelled (Ctrl+C).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_TIMEOUT = 3
EXIT_CANCELLED = 130

_RUN_FLAGS_HELP = """\
exit codes: 0 completed, 1 failed (no answer), 2 usage/config error,
            3 timed out (best answer so far printed), 130 cancelled"""


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds > 0, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds > 0, got {text!r}")
    return value


def _visibility(text: str) -> str:
    import re

    if not re.fullmatch(r"all|ring|islands:[1-9][0-9]*", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not one of: all, ring, islands:K (K >= 1)")
    return text


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", nargs="?", help="the task; read from stdin when omitted and piped")
    p.add_argument("--config", metavar="PATH", help="YAML config (default: three scripted agents)")
    p.add_argument(
        "--agents", type=_positive_int, metavar="N", help="number of scripted agents (no --config)"
    )
    p.add_argument("--agent-mode", choices=("single", "multi"), default="multi")
    p.add_argument(
        "--agent", metavar="ID", help="in single mode, which agent runs (default: the first)"
    )
    p.add_argument("--refinement", choices=("on", "off"), default="on")
    p.add_argument(
        "--final-answer-strategy", choices=("winner_reuse", "winner_present", "synthesize")
    )
    p.add_argument("--visibility", type=_visibility, metavar="all|ring|islands:K")
    p.add_argument("--in-flight-policy", choices=("cancel", "finish"))
    p.add_argument("--output-format", choices=("text", "json", "stream-json"), default="text")
    p.add_argument(
        "--log-dir", metavar="DIR", help="where events.jsonl goes (default: .conclave/runs/<id>)"
    )
    p.add_argument("--timeout", type=_positive_float, metavar="SECONDS", help="whole-run timeout")
    p.add_argument(
        "--verbose", action="store_true", help="show every agent status change on stderr"
    )


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
        + _RUN_FLAGS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"conclave {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = sub.add_parser(
        "run",
        help="run one task headless; answer on stdout, progress on stderr",
        epilog=_RUN_FLAGS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_run_arguments(run)
    replay = sub.add_parser("replay", help="print a finished run's timeline from its events.jsonl")
    replay.add_argument("events", metavar="EVENTS.jsonl")
    replay.add_argument(
        "--verbose", action="store_true", help="include status changes and LLM calls"
    )
    validate = sub.add_parser("validate", help="check a config file and exit")
    validate.add_argument("config", metavar="CONFIG")
    bench = sub.add_parser(
        "bench", help="load benchmarks of many parallel agents (tables on stdout, JSON file)"
    )
    from benchmarks.bench_args import add_bench_arguments

    add_bench_arguments(bench)
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
        return EXIT_OK


def _dispatch(argv: Sequence[str] | None) -> int:
    args_list = _normalise(list(sys.argv[1:] if argv is None else argv))
    parser = build_parser()
    args = parser.parse_args(args_list)
    from runtime.gc_tuning import tune_gc_for_actors

    tune_gc_for_actors()
    if args.command == "run":
        from ui.print_mode import run_command

        return run_command(args, parser)
    if args.command == "replay":
        from ui.replay import replay_command

        return replay_command(args.events, verbose=args.verbose)
    if args.command == "validate":
        from ui.print_mode import validate_command

        return validate_command(args.config)
    if args.command == "bench":
        from benchmarks.load_bench import main as bench_main

        return bench_main(args=args)
    parser.print_help(sys.stderr)
    print(
        "\nconclave: the interactive REPL is not built yet; run a task with `conclave run TASK`.",
        file=sys.stderr,
    )
    return EXIT_USAGE


if __name__ == "__main__":
    raise SystemExit(main())
