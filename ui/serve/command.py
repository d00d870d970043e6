"""``conclave serve``: the websocket API, until a signal stops it.

It prints where it listens and the token on stdout (one line each, for people and for
scripts that start it), and a line per run started and ended on stderr.

Signals: the first SIGINT, SIGHUP or SIGTERM stops the server in order (no new connections
or runs, every run cancelled with its best answer so far, clients given the runs' last lines
and closed with 1001); a second one during that stop cancels what remains at once. Exit
codes (docs/exit-codes.md): 130 after SIGINT or SIGHUP, 143 after SIGTERM, 2 for a flag or
config that is wrong (a port in use, a non-local ``--host`` without ``--token-file``).
"""

from __future__ import annotations

import argparse
import sys

import trio

from conclave.config.modes import ModeState
from conclave.config.problems import ConfigError
from conclave.config.resolver import ResolvedConfig, RunFlags, UsageError, resolve
from conclave.ui.exit_codes import ExitCode
from conclave.ui.log_dir import resolve_log_root
from conclave.ui.serve.auth import (
    TokenError,
    generate_token,
    is_local_host,
    normalise_origin,
    read_token_file,
)
from conclave.ui.serve.runs import ServeSettings
from conclave.ui.serve.server import Server, open_server
from conclave.ui.signals import STOP_SIGNALS, StopSignals, signal_exit_code

__all__ = ["serve_command"]


class _Usage(Exception):
    """A flag or the config is wrong; the message says which and what to do."""


def serve_command(args: argparse.Namespace) -> int:
    try:
        settings = _settings(args)
    except _Usage as exc:
        print(f"conclave serve: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    signals = StopSignals()
    with signals.installed():
        try:
            trio.run(_serve, settings, args, signals)
        except OSError as exc:
            print(
                f"conclave serve: cannot listen on {args.host} port {args.port} "
                f"({exc.strerror or exc}); choose another --port (0: any free port) or --host",
                file=sys.stderr,
            )
            return ExitCode.USAGE
    return signal_exit_code(signals.received[0]) if signals.received else ExitCode.OK


def _settings(args: argparse.Namespace) -> ServeSettings:
    if args.token_file is None and not is_local_host(args.host):
        raise _Usage(
            f"--host {args.host} is not a loopback address, so other machines could connect; "
            "pass --token-file FILE holding a secret token as well (or listen on 127.0.0.1)"
        )
    try:
        token = read_token_file(args.token_file) if args.token_file else generate_token()
    except TokenError as exc:
        raise _Usage(str(exc)) from None
    try:
        log_root = resolve_log_root(args.log_dir)
    except UsageError as exc:
        raise _Usage(str(exc)) from None
    return ServeSettings(
        resolved=_config(args),
        token=token,
        log_root=log_root,
        allowed_origins=frozenset(normalise_origin(o) for o in args.allow_origin or ()),
        max_runs=args.max_runs,
        client_buffer=args.client_buffer,
    )


def _config(args: argparse.Namespace) -> ResolvedConfig:
    """The config every run starts from, through the one resolver; checked at once as a run
    in the default modes would use it (a client's ``start_run`` is checked again for its
    own modes)."""
    try:
        resolved = resolve(RunFlags.from_args(args))
        resolved.for_modes(ModeState())
    except (UsageError, ConfigError) as exc:
        raise _Usage(str(exc)) from None
    note = resolved.source_note(len(resolved.base.agents))
    if note is not None:
        print(f"conclave serve: {note}", file=sys.stderr)
    return resolved


def _say(line: str) -> None:
    print(f"conclave serve: {line}", file=sys.stderr, flush=True)


def _announce(server: Server, args: argparse.Namespace) -> None:
    host = f"[{args.host}]" if ":" in args.host else args.host
    where = f"{host}:{server.port}"
    lines = [f"listening on ws://{where}"]
    if args.token_file is None:
        lines.append(f"token: {server.settings.token}")
    else:
        lines.append(f"token: the one in {args.token_file}")
    lines.append(f"health: http://{where}/health")
    for line in lines:
        print(f"conclave serve: {line}", flush=True)
    _say("Ctrl+C stops the server (runs in progress are cancelled)")


async def _serve(settings: ServeSettings, args: argparse.Namespace, signals: StopSignals) -> None:
    """Serve until the first stop signal, then stop in order; a second signal cuts the
    orderly stop short."""
    hard_stop = trio.CancelScope()
    stopping = trio.Event()
    with trio.open_signal_receiver(*STOP_SIGNALS) as receiver, hard_stop:

        async def on_signals() -> None:
            if signals.received:  # before we listened: during trio's start-up
                stopping.set()
            async for signum in receiver:
                signals.received.append(signum)
                if stopping.is_set():
                    hard_stop.cancel()
                stopping.set()

        async with open_server(settings, host=args.host, port=args.port, say=_say) as server:
            _announce(server, args)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(on_signals)
                await stopping.wait()
                _say("stopping: cancelling runs, closing connections")
                await server.stop()
                nursery.cancel_scope.cancel()
