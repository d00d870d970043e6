"""``conclave serve``'s flags: the shared run flags without the mode flags (each client's
``start_run`` names its run's modes; :func:`config.flags.add_run_flags`) and the server's own.
Only argparse here: registering the command must stay cheap so that ``conclave --help``
starts fast; :mod:`ui.serve.command` resolves the values."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from conclave.config.flags import add_run_flags

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "add_serve_arguments"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def _port(text: str) -> int:
    expected = "a port number from 0 (any free port) to 65535"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {value}")
    return value


def _whole(low: int, high: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        expected = f"a whole number >= {low:,} and <= {high:,}"
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {value}")
        return value

    return parse


def _origin(text: str) -> str:
    import re

    if not re.fullmatch(r"https?://[^/\s]+", text.strip().rstrip("/")):
        raise argparse.ArgumentTypeError(
            f"expected an origin such as http://localhost:3000 (scheme://host[:port], no path), "
            f"got {text!r}"
        )
    return text


def add_serve_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help=f"address to listen on (default {DEFAULT_HOST}; any other than a loopback "
        "address needs --token-file)",
    )
    p.add_argument(
        "--port",
        type=_port,
        default=DEFAULT_PORT,
        help=f"port to listen on (default {DEFAULT_PORT}; 0: any free port, printed)",
    )
    p.add_argument(
        "--token-file",
        metavar="FILE",
        help="read the clients' bearer token from FILE (default: a new token, printed)",
    )
    p.add_argument(
        "--allow-origin",
        action="append",
        type=_origin,
        metavar="ORIGIN",
        help="let browser pages from ORIGIN (http://host:port) connect; repeatable (default: "
        "none; clients that send no Origin, such as scripts, are not affected)",
    )
    add_run_flags(
        p,
        modes=False,
        help={"timeout": "each run's whole-run timeout (a start_run's timeout wins)"},
    )
    p.add_argument(
        "--log-dir",
        metavar="DIR",
        help="where each run's directory (events.jsonl) goes (default: .conclave/runs)",
    )
    p.add_argument(
        "--max-runs",
        type=_whole(1, 1000),
        default=4,
        metavar="N",
        help="runs at once; more are refused with a busy error (default 4)",
    )
    p.add_argument(
        "--client-buffer",
        type=_whole(16, 10_000_000),
        default=8192,
        metavar="LINES",
        help="lines a client may leave unread before it is dropped (default 8192)",
    )
