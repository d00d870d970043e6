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
from pathlib import Path

import trio

from conclave.config.discovery import discover_config
from conclave.config.loader import ConfigError, load_config
from conclave.config.schema import ConclaveConfig, default_config
from conclave.config.validation import check_runnable
from conclave.ui.exit_codes import ExitCode
from conclave.ui.headless.command import STOP_SIGNALS, StopSignals, signal_exit_code
from conclave.ui.serve.auth import (
    TokenError,
    generate_token,
    is_local_host,
    normalise_origin,
    read_token_file,
)
from conclave.ui.serve.runs import ServeSettings
from conclave.ui.serve.server import Server, open_server

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
    log_root = Path(args.log_dir) if args.log_dir else Path(".conclave") / "runs"
    if args.log_dir is not None and not args.log_dir.strip():
        raise _Usage("--log-dir is empty; pass the directory the runs' logs go under")
    return ServeSettings(
        config=_config(args),
        token=token,
        log_root=log_root,
        allowed_origins=frozenset(normalise_origin(o) for o in args.allow_origin or ()),
        max_runs=args.max_runs,
        client_buffer=args.client_buffer,
    )


def _config(args: argparse.Namespace) -> ConclaveConfig:
    """The config every run starts from, checked as ``conclave run`` checks it."""
    source: str | None = args.config
    if source is not None and args.agents is not None:
        raise _Usage("--agents applies only to the default scripted agents; drop it or --config")
    if source is None and args.agents is None:
        found = discover_config(None)
        if found.path is not None:
            source = str(found.path)
            print(f"conclave serve: {found.describe()}", file=sys.stderr)
    try:
        config = load_config(source) if source is not None else default_config(args.agents or 3)
        check_runnable(config, source=source)
    except ConfigError as exc:
        raise _Usage(str(exc)) from None
    return config


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
