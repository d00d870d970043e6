"""``conclave validate CONFIG``: check a config file the way ``conclave run`` would."""

from __future__ import annotations

import sys

from config.loader import ConfigError, load_config
from ui.exit_codes import ExitCode

__all__ = ["validate_command"]


def validate_command(path: str) -> int:
    try:
        config = load_config(path)
    except ConfigError as exc:
        print(f"conclave: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    print(f"{path}: ok ({len(config.agents)} agents: {', '.join(a.id for a in config.agents)})")
    return ExitCode.OK
