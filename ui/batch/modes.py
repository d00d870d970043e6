"""``--compare-modes``: the rows of the modes table (config/modes.py) a batch runs in."""

from __future__ import annotations

import re

import attrs

from conclave.config.modes import AgentMode
from conclave.config.resolver import UsageError

__all__ = ["ModeName", "parse_modes"]


@attrs.frozen(kw_only=True)
class ModeName:
    """A row of the modes table (config/modes.py): agent mode by refinement."""

    agent_mode: AgentMode
    refinement: bool

    @property
    def name(self) -> str:
        return self.agent_mode.value + ("" if self.refinement else "-norefine")


_MODE_NAME = re.compile(r"(single|multi)(-norefine|-refine)?")


def parse_modes(text: str) -> list[ModeName]:
    """``single,multi-norefine`` → its modes, in order; :class:`UsageError` names a bad one."""
    modes: list[ModeName] = []
    for part in (p.strip() for p in text.split(",")):
        match = _MODE_NAME.fullmatch(part)
        if match is None:
            raise UsageError(
                f"--compare-modes: {part!r} is not a mode; use single, multi, single-norefine "
                "or multi-norefine, separated by commas"
            )
        mode = ModeName(
            agent_mode=AgentMode(match.group(1)), refinement=match.group(2) != "-norefine"
        )
        if mode in modes:
            raise UsageError(f"--compare-modes: {mode.name} is named twice; name it once")
        modes.append(mode)
    return modes
