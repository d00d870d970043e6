"""What a batch knows before anything runs: the modes, the config of every (line, mode)
with its hash, the good and bad lines, and how to grade. Everything here is checked up
front, so ``--dry-run`` is this module and nothing more."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import attrs

from conclave.actors.batch.ray_engine import RayMissing, require_ray
from conclave.config.modes import AgentMode, CollaborationMode, ModeState
from conclave.config.problems import ConfigError
from conclave.config.resolver import ResolvedConfig, RunFlags, UsageError, resolve
from conclave.config.schema import ConclaveConfig
from conclave.ui.batch.fingerprint import config_hash
from conclave.ui.batch.grading import DEFAULT_TOLERANCE, Grade, expected_problem
from conclave.ui.batch.modes import ModeName, parse_modes
from conclave.ui.batch.tasks import BadLine, TaskLine, apply_overrides, read_tasks
from conclave.ui.text import display_path

__all__ = ["BatchSetup", "prepare"]


@attrs.frozen(kw_only=True)
class BatchSetup:
    modes: list[ModeName]
    bases: dict[str, ConclaveConfig]
    """Mode name → the config of a line without overrides."""
    base_hashes: dict[str, str]
    tasks: list[TaskLine]
    bad: list[BadLine]
    configs: dict[tuple[str, str], ConclaveConfig]
    """(id, mode) → the config of a line with overrides."""
    hashes: dict[tuple[str, str], str]
    """(id, mode) → the hash of a line's config with overrides."""
    grade: Grade | None
    tolerance: float
    collaboration: CollaborationMode

    def config_for(self, line: TaskLine, mode: ModeName) -> ConclaveConfig:
        return self.configs.get((line.key, mode.name), self.bases[mode.name])

    def hash_for(self, line: TaskLine, mode: ModeName) -> str:
        return self.hashes.get((line.key, mode.name), self.base_hashes[mode.name])


def prepare(args: argparse.Namespace) -> BatchSetup:
    """Check the flags, the config and every line. Raises :class:`UsageError` or
    :class:`ConfigError` for what stops the whole batch; a bad line is only listed."""
    _check_flags(args)
    modes = (
        parse_modes(args.compare_modes)
        if args.compare_modes is not None
        else [ModeName(agent_mode=AgentMode(args.agent_mode), refinement=args.refinement == "on")]
    )
    flags = RunFlags.from_args(args)
    states = flags.mode_states([(m.agent_mode, m.refinement) for m in modes])
    resolved = resolve(flags)
    _say_where(resolved)
    bases = {m.name: resolved.for_flags(state) for m, state in zip(modes, states, strict=True)}
    tasks_path = Path(args.tasks)
    try:
        lines, bad = read_tasks(tasks_path)
    except OSError as exc:
        raise UsageError(
            f"cannot read {display_path(tasks_path)} ({exc.strerror or exc}); pass the path "
            "of a JSON Lines file of tasks"
        ) from None
    grade = Grade(args.grade) if args.grade is not None else None
    good: list[TaskLine] = []
    configs: dict[tuple[str, str], ConclaveConfig] = {}
    for line in lines:
        problem = _line_problem(line, resolved, modes, states, grade, configs)
        if problem is None:
            good.append(line)
        else:
            bad.append(BadLine(line=line.line, reason=problem))
    bad.sort(key=lambda b: b.line)
    collaboration = flags.collaboration
    return BatchSetup(
        modes=modes,
        bases=bases,
        base_hashes={name: config_hash(c, collaboration) for name, c in bases.items()},
        tasks=good,
        bad=bad,
        configs=configs,
        hashes={key: config_hash(c, collaboration) for key, c in configs.items()},
        grade=grade,
        tolerance=DEFAULT_TOLERANCE if args.tolerance is None else args.tolerance,
        collaboration=collaboration,
    )


def _check_flags(args: argparse.Namespace) -> None:
    if args.out is None and not args.dry_run:
        raise UsageError("--out RESULTS.jsonl is required (where results are appended)")
    if args.rerun_changed and args.force:
        raise UsageError(
            "--rerun-changed runs again the results made with another config, --force keeps "
            "them: pass one of them"
        )
    if args.engine == "ray":
        if args.workers > 1:
            raise UsageError(
                "--workers is for --engine local; on Ray every run is a task of its own: "
                "drop --workers"
            )
        try:
            require_ray(args.address)
        except RayMissing as exc:
            raise UsageError(str(exc)) from None
    elif args.address is not None:
        raise UsageError("--address is the Ray cluster's; add --engine ray or drop --address")
    if args.workers > args.concurrency:
        raise UsageError(
            f"--workers {args.workers} is more than --concurrency {args.concurrency}: each "
            "worker runs at least one run at a time; raise --concurrency or lower --workers"
        )
    if args.out is not None and _same_file(Path(args.tasks), Path(args.out)):
        raise UsageError("--out is the tasks file itself; pass another file for the results")
    if args.tolerance is not None and args.grade != "number":
        raise UsageError("--tolerance applies to --grade number; add it or drop --tolerance")


def _say_where(resolved: ResolvedConfig) -> None:
    for note in (resolved.source_note(len(resolved.base.agents)), resolved.unpriced_note()):
        if note is not None:
            print(f"conclave batch: {note}", file=sys.stderr)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _line_problem(
    line: TaskLine,
    resolved: ResolvedConfig,
    modes: Sequence[ModeName],
    states: Sequence[ModeState],
    grade: Grade | None,
    configs: dict[tuple[str, str], ConclaveConfig],
) -> str | None:
    """Why the line cannot run (in some mode), or ``None``; its overridden configs go to
    ``configs``."""
    if grade is not None and line.expected is not None:
        problem = expected_problem(grade, line.expected)
        if problem is not None:
            return problem
    if line.overrides is None:
        return None
    try:
        overridden = attrs.evolve(resolved, base=apply_overrides(resolved.base, line.overrides))
        for mode, state in zip(modes, states, strict=True):
            configs[line.key, mode.name] = overridden.for_flags(state)
    except ConfigError as exc:
        return "overrides refused: " + "; ".join(p.render() for p in exc.problems)
    except UsageError as exc:
        return f"overrides refused: {exc}"
    return None
