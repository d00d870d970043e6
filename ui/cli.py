"""The ``conclave`` command. Imports only argparse at start-up; each command imports what it
needs when it runs, so ``conclave --help`` stays fast.

One small registration function per subcommand: it declares the flags and names the
handler. Exit codes live in :mod:`ui.exit_codes` and are documented in docs/exit-codes.md.

Whatever happens, the command ends with a message of one line and a documented exit code,
never a traceback: a usage error exits 2, Ctrl+C or SIGHUP before a run has started exits
130 and SIGTERM 143 (quietly), and an unexpected exception exits 1 naming the command and the
error (``CONCLAVE_TRACEBACK=1`` prints the traceback as well, for a bug report). With
``--output-format json`` stdout holds exactly one JSON object even then: the result, or
``{"error": ..., "exit_code": ...}``.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import gc
import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import NoReturn, TypeAlias

from conclave.ui.entry import Stopped, raise_stopped, report, wants_json
from conclave.ui.exit_codes import ExitCode
from conclave.ui.signals import signal_exit_code

__all__ = ["build_parser", "main"]

Handler = Callable[[argparse.Namespace, argparse.ArgumentParser], int]

_EXIT_CODES_HELP = """\
exit codes: 0 completed, 1 failed (no answer, or an internal error), 2 usage/config error,
            3 timed out (best answer so far printed, if any), 4 paused (a question needs the
            user: conclave resume), 5 max iterations (a PAOR agent's progress report printed),
            130 cancelled (Ctrl+C, SIGHUP), 143 terminated (SIGTERM);
            see docs/exit-codes.md"""


class _UsageError(Exception):
    """argparse's complaint about the command line, raised instead of exiting so that
    ``main`` can also print it as a JSON error object."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser
        self.message = message


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(self, message)


_Subcommands: TypeAlias = "argparse._SubParsersAction[_Parser]"


def _register_run(sub: _Subcommands) -> None:
    from conclave.ui.headless.arguments import add_run_arguments

    run = sub.add_parser(
        "run",
        help="run one task headless; answer on stdout, progress on stderr",
        epilog=_EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_run_arguments(run)

    def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        from conclave.ui.headless.command import run_command

        return run_command(args)

    run.set_defaults(handler=handle)


def _register_resume(sub: _Subcommands) -> None:
    from conclave.ui.headless.arguments import add_resume_arguments

    resume = sub.add_parser(
        "resume",
        help="go on with a run paused on a question (--on-question pause), given the answer",
        description="Go on with a run paused on a question (exit 4): a single agent in the\n"
        "round it asked in, or a presenter in its presentation, after the same answers and\n"
        "votes. Logs into RUN_DIR/resumed-N, in the paused run's session; `conclave\n"
        "replay RUN_DIR/resumed-N` shows the whole run, and its writes cover it too. See\n"
        "docs/exit-codes.md: what is resumed, and what is refused (exit 2).",
        epilog=_EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_resume_arguments(resume)

    def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        from conclave.ui.headless.resume import resume_command

        return resume_command(args)

    resume.set_defaults(handler=handle)


def _register_chat(sub: _Subcommands) -> None:
    from conclave.ui.headless.arguments import add_chat_arguments

    chat = sub.add_parser(
        "chat",
        help="talk with the interactive agent headless; it answers or launches runs (--yes)",
        epilog=_EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_chat_arguments(chat)

    def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        from conclave.ui.headless.chat import chat_command

        return chat_command(args)

    chat.set_defaults(handler=handle)


def _register_project(sub: _Subcommands) -> None:
    project = sub.add_parser("project", help="project workspaces (docs/interactive.md)")
    actions = project.add_subparsers(dest="project_action", metavar="ACTION", required=True)
    init = actions.add_parser(
        "init", help="create NAME/ with CONTEXT.md, filepaths.json, runs/ and deliverables/"
    )
    init.add_argument("name", metavar="NAME", help="the project's directory (must not exist)")

    def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        from conclave.ui.project_command import project_init_command

        return project_init_command(args.name)

    init.set_defaults(handler=handle)


def _register_batch(sub: _Subcommands) -> None:
    from conclave.ui.batch.arguments import add_batch_arguments

    batch = sub.add_parser(
        "batch",
        help="run every task of a JSON Lines file; resumable; results appended to --out",
        description="See docs/batch.md: file formats, resume, grading, exit codes.",
    )
    add_batch_arguments(batch)

    def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        from conclave.ui.batch.command import batch_command

        return batch_command(args)

    batch.set_defaults(handler=handle)


def _register_report(sub: _Subcommands) -> None:
    from conclave.ui.batch.report_arguments import add_report_arguments

    report = sub.add_parser(
        "report",
        help="tables (Markdown) and an HTML report of conclave batch results",
        description="See docs/batch.md: the report.",
    )
    add_report_arguments(report)

    def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        from conclave.ui.batch.report_command import report_command

        return report_command(args)

    report.set_defaults(handler=handle)


def _register_replay(sub: _Subcommands) -> None:
    replay = sub.add_parser("replay", help="print a finished run's timeline from its events.jsonl")
    replay.add_argument("events", metavar="EVENTS.jsonl")
    replay.add_argument(
        "--verbose", action="store_true", help="include status changes and LLM calls"
    )

    def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        from conclave.ui.replay import replay_command

        return replay_command(args.events, verbose=args.verbose)

    replay.set_defaults(handler=handle)


def _register_validate(sub: _Subcommands) -> None:
    validate = sub.add_parser(
        "validate", help="check a config file the way `conclave run` would, and exit"
    )
    validate.add_argument("config", metavar="CONFIG")
    validate.add_argument(
        "--json", action="store_true", help="print {valid, errors, warnings} as one JSON object"
    )
    validate.add_argument(
        "--check-endpoints",
        action="store_true",
        help="send one tiny request per endpoint and model to check the URL, key and model",
    )

    def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        from conclave.ui.headless.validate import validate_command

        return validate_command(args.config, as_json=args.json, check=args.check_endpoints)

    validate.set_defaults(handler=handle)


def _register_bench(sub: _Subcommands) -> None:
    from conclave.benchmarks.bench_args import add_bench_arguments

    bench = sub.add_parser(
        "bench", help="load benchmarks of many parallel agents (tables on stdout, JSON file)"
    )
    add_bench_arguments(bench)

    def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        from conclave.benchmarks.http_bench import bench_command

        return bench_command(args)

    bench.set_defaults(handler=handle)


def _register_import(sub: _Subcommands) -> None:
    imports = sub.add_parser("import", help="convert another tool's config to Conclave's")
    sources = imports.add_subparsers(dest="source_tool", metavar="TOOL", required=True)
    massgen = sources.add_parser(
        "massgen",
        help="convert a MassGen config; prints what was changed or dropped, writes it only "
        "if it validates (exit 0), else exit 2",
    )
    massgen.add_argument("source", metavar="MASSGEN.yaml", help="the MassGen config to convert")
    massgen.add_argument(
        "-o", "--output", metavar="CONCLAVE.yaml", help="write it here (default: stdout)"
    )
    massgen.add_argument("--force", action="store_true", help="replace the -o file if it exists")

    def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        from conclave.ui.import_command import import_massgen_command

        return import_massgen_command(args)

    massgen.set_defaults(handler=handle)


def _register_sandbox(sub: _Subcommands) -> None:
    from conclave.ui.sandbox_command import add_sandbox_command

    add_sandbox_command(sub)


def _register_mcp(sub: _Subcommands) -> None:
    from conclave.ui.mcp_command import add_mcp_command

    add_mcp_command(sub)


def _register_repl(sub: _Subcommands) -> None:
    from conclave.ui.repl.arguments import add_repl_arguments

    repl = sub.add_parser(
        "repl", help="the interactive REPL (also what a bare `conclave` in a terminal starts)"
    )
    add_repl_arguments(repl)

    def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        from conclave.ui.repl.app import repl_command

        return repl_command(args)

    repl.set_defaults(handler=handle)


def _register_sessions(sub: _Subcommands) -> None:
    from conclave.ui.sessions_command import add_sessions_command

    add_sessions_command(sub)


def _register_serve(sub: _Subcommands) -> None:
    from conclave.ui.serve.arguments import add_serve_arguments

    serve = sub.add_parser(
        "serve",
        help="the websocket API: clients start, watch and steer runs (docs/serve.md)",
        description="See docs/serve.md: authentication, the protocol, an example client.",
    )
    add_serve_arguments(serve)

    def handle(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        from conclave.ui.serve.command import serve_command

        return serve_command(args)

    serve.set_defaults(handler=handle)


_COMMANDS: dict[str, Callable[[_Subcommands], None]] = {
    "run": _register_run,
    "resume": _register_resume,
    "chat": _register_chat,
    "project": _register_project,
    "batch": _register_batch,
    "report": _register_report,
    "repl": _register_repl,
    "sessions": _register_sessions,
    "serve": _register_serve,
    "replay": _register_replay,
    "validate": _register_validate,
    "bench": _register_bench,
    "import": _register_import,
    "sandbox": _register_sandbox,
    "mcp": _register_mcp,
}
"""Each command's name and the function that adds its parser."""


class _VersionAction(argparse.Action):
    """``--version``, looked up only when asked: reading the installed package's metadata
    costs ~30 ms, which every command (the REPL's start-up included) paid when the parser was
    built with the text already in it."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(
            option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version"
        )

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        print(f"conclave {_version()}")
        parser.exit()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("conclave")
    except PackageNotFoundError:
        return "unknown (not installed)"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``conclave`` parser: every command's, or with ``command`` (a name in
    :data:`_COMMANDS`) that command's alone. A command line that names its command needs no
    other: each imports its arguments module, and all of them cost ~8 ms of every start-up."""
    parser = _Parser(
        prog="conclave",
        description="Several LLM agents attack one task in parallel, see each other's answers, "
        "vote, and the winner presents the final answer.",
        epilog="`conclave -p TASK` and `echo TASK | conclave` are short for `conclave run TASK`.\n"
        + _EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, register in _COMMANDS.items():
        if command is None or name == command:
            register(sub)
    return parser


def _normalise(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """``-p TASK`` and a bare piped task become ``run``; with a terminal on stdin, nothing at
    all, or only flags the REPL takes (``conclave --config x.yaml``, ``conclave --mode
    plan``), is ``repl``; anything else without a command (a task) is ``run``."""
    if argv and argv[0] in _commands(parser):
        return argv
    if "-p" in argv or "--print" in argv:
        return ["run", *[a for a in argv if a not in ("-p", "--print")]]
    if sys.stdin is None:
        return ["run", *argv] if argv else argv
    if not sys.stdin.isatty():
        return ["run", *argv]
    return ["repl", *argv] if _repl_takes(parser, argv) else ["run", *argv]


def _commands(parser: argparse.ArgumentParser) -> set[str]:
    return {*_subcommand_names(parser), "-h", "--help", "--version"}


def _repl_takes(parser: argparse.ArgumentParser, argv: list[str]) -> bool:
    """Whether ``argv`` is a line of the REPL's flags and nothing else: no task, no flag of
    a headless run only (``--output-format``), no help, and every value valid (a bad one is
    reported by ``run``, whose usage names every flag)."""
    if "-h" in argv or "--help" in argv:
        return False
    try:
        _, unknown = _subcommand_parser(parser, "repl").parse_known_args(argv)
    except _UsageError:
        return False
    return not unknown


def _refuse_misspelt_command(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """``conclave valdate x.yaml`` would otherwise run "valdate x.yaml" as a task, which costs
    API calls with a real config: a first word close to a command, and not itself a command,
    is refused with the command it resembles."""
    if not argv or argv[0].startswith("-") or any(ch.isspace() for ch in argv[0]):
        return
    commands = list(_subcommand_names(parser))
    if argv[0] in commands:
        return
    close = difflib.get_close_matches(argv[0], commands, n=1, cutoff=0.75)
    if close:
        raise _UsageError(
            parser,
            f"unknown command '{argv[0]}'; did you mean '{close[0]}'? "
            f'(to run it as a task: conclave run "{" ".join(argv)}")',
        )


def _subcommand_names(parser: argparse.ArgumentParser) -> Iterator[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices


def _subcommand_parser(
    parser: argparse.ArgumentParser, command: str | None
) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            chosen: argparse.ArgumentParser = action.choices[command]
            return chosen
    return parser


def _closest_option(parser: argparse.ArgumentParser, unknown: list[str]) -> str:
    """`` (did you mean --agents?)`` for the first unknown option near one of ``parser``'s."""
    options = [o for action in parser._actions for o in action.option_strings]
    for arg in unknown:
        if arg.startswith("--"):
            close = difflib.get_close_matches(arg.partition("=")[0], options, n=1, cutoff=0.7)
            if close:
                return f" (did you mean {close[0]}?)"
    return ""


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    json_errors = wants_json(args_list)
    command = "conclave"
    try:
        with _stop_signals_raise():
            named = args_list[0] if args_list and args_list[0] in _COMMANDS else None
            parser = build_parser(named)
            _refuse_misspelt_command(parser, args_list)
            normalised = _normalise(args_list, parser)
            command = _command_name(normalised)
            return _dispatch(parser, normalised)
    except _UsageError as exc:
        exc.parser.print_usage(sys.stderr)
        return report(f"{exc.parser.prog}: error: {exc.message}", ExitCode.USAGE, json_errors)
    except SystemExit as exc:  # --help, --version, or a command's own sys.exit
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or ExitCode.OK
        return report(f"{command}: {exc.code}", ExitCode.FAILED, json_errors)
    except KeyboardInterrupt:
        return report(None, ExitCode.CANCELLED, json_errors)
    except Stopped as exc:
        return report(None, signal_exit_code(exc.signum), json_errors)
    except BrokenPipeError:
        # The reader of stdout left (``| head``): say nothing more, and point stdout at
        # /dev/null so Python's exit-time flush does not raise again.
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitCode.OK
    except Exception as exc:
        if os.environ.get("CONCLAVE_TRACEBACK"):
            import traceback

            traceback.print_exc()
        detail = " ".join(f"{type(exc).__name__}: {exc}".split())
        detail = detail if len(detail) <= 500 else detail[:499] + "…"
        message = f"{command}: internal error: {detail}"
        message += " (a bug; CONCLAVE_TRACEBACK=1 shows where)"
        return report(message, ExitCode.FAILED, json_errors)


def _command_name(normalised: list[str]) -> str:
    first = normalised[0] if normalised else ""
    named = (
        "run",
        "resume",
        "chat",
        "project",
        "batch",
        "report",
        "repl",
        "sessions",
        "serve",
        "replay",
        "validate",
        "bench",
        "import",
    )
    return f"conclave {first}" if first in named else "conclave"


@contextlib.contextmanager
def _stop_signals_raise() -> Iterator[None]:
    """SIGTERM and SIGHUP raise :class:`Stopped` while a command starts up, as SIGINT
    raises KeyboardInterrupt; a run installs its own handling once it begins."""

    previous = {}
    with contextlib.suppress(ValueError):  # only the main thread may set handlers
        for signum in (signal.SIGTERM, signal.SIGHUP):
            previous[signum] = signal.signal(signum, raise_stopped)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _tune_gc_for_actors() -> None:
    """Tune the collector for actor systems (:mod:`runtime.gc_tuning`), importing the runtime
    with the collector off: its modules' classes and functions live as long as the process,
    and under the default thresholds the collector scanned them some fifty times while they
    loaded (8-9 ms of the start-up before a run's first request)."""
    gc.disable()
    try:
        from conclave.runtime.gc_tuning import tune_gc_for_actors

        tune_gc_for_actors()  # before the collector is back on, or it would scan them all now
    finally:
        gc.enable()


def _dispatch(parser: argparse.ArgumentParser, normalised: list[str]) -> int:
    args, unknown = parser.parse_known_args(normalised)
    if unknown:
        # Said by the command's own parser (its usage, not the top level's), with the
        # closest option when one is near: argparse alone names neither.
        chosen = _subcommand_parser(parser, getattr(args, "command", None))
        chosen.error(
            f"unrecognized arguments: {' '.join(unknown)}{_closest_option(chosen, unknown)}"
        )
    if args.command != "repl":  # the REPL tunes it once its runtime is loaded (start-up time)
        _tune_gc_for_actors()
    handler: Handler | None = getattr(args, "handler", None)
    if handler is not None:
        return handler(args, parser)
    parser.print_help(sys.stderr)
    print(
        "\nconclave: the REPL needs a terminal on stdin; run a task with `conclave run TASK`.",
        file=sys.stderr,
    )
    return ExitCode.USAGE


if __name__ == "__main__":
    raise SystemExit(main())
