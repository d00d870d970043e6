"""``conclave validate CONFIG``: check a config file the way ``conclave run`` would.

The same loader and the same whole-config checks (:func:`config.validation.check_runnable`)
as a run, so a config that validates does not then fail as a run, and the other way round.
"""

from __future__ import annotations

import sys

from config.loader import ConfigError, load_config
from config.validation import check_runnable
from ui.exit_codes import ExitCode
from ui.headless.result import display_path, plural

__all__ = ["validate_command"]

_SHOWN = 5
"""Agent ids the confirmation names; past that it counts, so it stays one short line."""


def validate_command(path: str) -> int:
    try:
        config = load_config(path)
        check_runnable(config, source=display_path(path))
    except ConfigError as exc:
        print(f"conclave: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    ids = [a.id for a in config.agents]
    names = ", ".join(ids[:_SHOWN])
    if len(ids) > _SHOWN:
        names += f" and {len(ids) - _SHOWN:,} more"
    print(f"{display_path(path)}: ok ({plural(len(ids), 'agent')}: {names})")
    return ExitCode.OK
