"""Which runs a batch starts, given what RESULTS already holds (resume).

A (line, mode) whose newest result is in RESULTS is skipped, unless ``--retry-failed`` and
that result did not complete. A result made with another config than the one the line now
has (its ``config_hash`` differs, or it has none) and that would otherwise be kept is not
silently reused: the batch refuses
(:class:`ConfigChanged`), runs it again (``--rerun-changed``) or keeps it (``--force``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from conclave.config.wording import listed, plural
from conclave.ui.batch.results import ResultKey, result_key
from conclave.ui.batch.setup import BatchSetup, Variant
from conclave.ui.batch.tasks import TaskLine

__all__ = ["ChangedConfig", "ConfigChanged", "Plan", "PlannedRun", "plan_runs"]


class ChangedConfig(enum.Enum):
    """What to do with results made with another config."""

    REFUSE = "refuse"
    RERUN = "rerun"
    """``--rerun-changed``"""
    KEEP = "keep"
    """``--force``"""


@attrs.frozen(kw_only=True)
class PlannedRun:
    line: TaskLine
    variant: Variant
    epoch: int = 1

    @property
    def label(self) -> str:
        epoch = "" if self.epoch == 1 else f", epoch {self.epoch}"
        return f"{self.line.key} ({self.variant.name}{epoch})"


@attrs.frozen(kw_only=True)
class Plan:
    runs: tuple[PlannedRun, ...]
    skipped: int
    """Runs whose result RESULTS already holds."""
    rerun_changed: int
    """Runs started again because their result was made with another config."""


class ConfigChanged(Exception):
    """Results made with another config, and neither ``--rerun-changed`` nor ``--force``."""

    def __init__(self, changed: Sequence[PlannedRun]) -> None:
        one = len(changed) == 1
        super().__init__(
            f"{plural(len(changed), 'result')} in it {'was' if one else 'were'} made with "
            f"another config than {'its run' if one else 'their runs'} would have now "
            f"({listed([run.label for run in changed])}); pass --rerun-changed to run "
            f"{'it' if one else 'them'} again with this config, or --force to keep "
            f"{'it' if one else 'them'}"
        )
        self.changed = tuple(changed)


def plan_runs(
    setup: BatchSetup,
    records: Mapping[ResultKey, Mapping[str, Any]],
    *,
    retry_failed: bool,
    changed: ChangedConfig,
) -> Plan:
    """The runs to start, by epoch, then task, then variant (a batch stopped half-way has
    every task's first epoch before any second). Raises :class:`ConfigChanged`."""
    runs: list[PlannedRun] = []
    stale: list[PlannedRun] = []
    skipped = 0
    wanted = (
        (epoch, line, variant)
        for epoch in range(1, setup.epochs + 1)
        for line in setup.tasks
        for variant in setup.variants
    )
    for epoch, line, variant in wanted:
        run = PlannedRun(line=line, variant=variant, epoch=epoch)
        earlier = records.get(result_key(line.id, variant.name, epoch))
        if earlier is None or (retry_failed and earlier.get("termination") != "completed"):
            runs.append(run)
        elif earlier.get("config_hash") != setup.hash_for(line, variant) and (
            changed is not ChangedConfig.KEEP
        ):
            stale.append(run)
            runs.append(run)
        else:
            skipped += 1
    if stale and changed is ChangedConfig.REFUSE:
        raise ConfigChanged(stale)
    return Plan(runs=tuple(runs), skipped=skipped, rerun_changed=len(stale))
