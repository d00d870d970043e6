"""``conclave sandbox build-image|cleanup``: the docker sandbox's image and leftovers.

Imports only argparse at start-up (``conclave --help`` stays fast); each command imports
the docker SDK when it runs.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_sandbox_command", "build_image_command", "cleanup_command"]


def add_sandbox_command(sub: argparse._SubParsersAction[Any]) -> None:
    """Register ``sandbox`` on the ``conclave`` subcommands ``sub``."""
    sandbox = sub.add_parser(
        "sandbox",
        help="the docker sandbox: build its image, remove containers left by killed runs",
    )
    actions = sandbox.add_subparsers(dest="sandbox_command", metavar="ACTION", required=True)
    build = actions.add_parser(
        "build-image",
        help="build the sandbox image locally from a static busybox (never pulled)",
    )
    build.add_argument(
        "--tag", default="conclave-sandbox:latest", help="image name (default: %(default)s)"
    )
    build.add_argument("--busybox", metavar="PATH", help="a static busybox (default: on PATH)")
    build.set_defaults(handler=lambda args, _parser: build_image_command(args.tag, args.busybox))
    cleanup = actions.add_parser(
        "cleanup", help="remove sandbox containers whose conclave process is gone"
    )
    cleanup.set_defaults(handler=lambda _args, _parser: cleanup_command())


def build_image_command(tag: str, busybox: str | None) -> int:
    """Build ``tag``; exit 0, or 1 with one line naming what to do (no engine, no busybox)."""
    from pathlib import Path

    from conclave.actors.sandbox.engine import connect
    from conclave.actors.sandbox.image import build_image
    from conclave.actors.sandbox.protocol import SandboxUnavailable
    from conclave.ui.exit_codes import ExitCode

    try:
        client = connect()
        try:
            image_id = build_image(client, tag=tag, busybox=Path(busybox) if busybox else None)
        finally:
            client.close()
    except SandboxUnavailable as exc:
        print(f"conclave: {exc}", file=sys.stderr)
        return ExitCode.FAILED
    print(f"built {tag} ({image_id.removeprefix('sha256:')[:12]})")
    return ExitCode.OK


def cleanup_command() -> int:
    """Remove orphaned sandbox containers and say which; exit 1 when no engine answers."""
    from conclave.actors.sandbox.engine import connect, remove_orphans
    from conclave.actors.sandbox.protocol import SandboxUnavailable
    from conclave.ui.exit_codes import ExitCode

    try:
        client = connect()
    except SandboxUnavailable as exc:
        print(f"conclave: {exc}", file=sys.stderr)
        return ExitCode.FAILED
    try:
        removed = remove_orphans(client)
    finally:
        client.close()
    for orphan in removed:
        owner = "unknown owner" if orphan.owner_pid is None else f"owner pid {orphan.owner_pid}"
        print(f"removed {orphan.name} (run {orphan.run_id}, agent {orphan.agent}, {owner} gone)")
    noun = "container" if len(removed) == 1 else "containers"
    print(f"{len(removed)} orphaned sandbox {noun} removed")
    return ExitCode.OK
