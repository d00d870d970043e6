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
from conclave.ui.batch.extract import Extractor, parse_extractor
from conclave.ui.batch.fingerprint import config_hash
from conclave.ui.batch.grading import (
    DEFAULT_TOLERANCE,
    Grade,
    Grader,
    expected_problem,
    parse_grader,
)
from conclave.ui.batch.judge import load_judge, read_rubric
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
    grader: Grader | None
    """``--grade``: for the lines without their own."""
    extractor: Extractor | None
    """``--extract``: for the lines without their own."""
    tolerance: float
    collaboration: CollaborationMode
    config_name: str
    """What results call the config: its file's name without ``.yaml``, or ``default``."""
    judge: ConclaveConfig | None = None
    """``--judge``: the config that grades ``model`` lines."""
    rubric: str = ""

    def grader_for(self, line: TaskLine) -> Grader | None:
        return line.grader if line.grader is not None else self.grader

    def extractor_for(self, line: TaskLine) -> Extractor | None:
        return line.extractor if line.extractor is not None else self.extractor

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
    grader, extractor = _grading_flags(args)
    judge = load_judge(args.judge) if args.judge is not None else None
    good: list[TaskLine] = []
    configs: dict[tuple[str, str], ConclaveConfig] = {}
    for line in lines:
        effective = line.grader if line.grader is not None else grader
        problem = _line_problem(line, resolved, modes, states, effective, configs)
        if problem is None and effective is not None and effective.method is Grade.MODEL:
            problem = None if judge is not None else '"grade": "model" needs --judge JUDGE.yaml'
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
        grader=grader,
        extractor=extractor,
        tolerance=DEFAULT_TOLERANCE if args.tolerance is None else args.tolerance,
        collaboration=collaboration,
        config_name=resolved.found.path.stem if resolved.found.path is not None else "default",
        judge=judge,
        rubric=read_rubric(args.rubric),
    )


def _grading_flags(args: argparse.Namespace) -> tuple[Grader | None, Extractor | None]:
    try:
        grader = parse_grader(args.grade) if args.grade is not None else None
    except ValueError as exc:
        raise UsageError(f"--grade: {exc}") from None
    try:
        extractor = parse_extractor(args.extract) if args.extract is not None else None
    except ValueError as exc:
        raise UsageError(f"--extract: {exc}") from None
    model = grader is not None and grader.method is Grade.MODEL
    if model and args.judge is None:
        raise UsageError("--grade model needs --judge JUDGE.yaml: the config that grades")
    if args.rubric is not None and args.judge is None:
        raise UsageError("--rubric is the judge's; add --judge JUDGE.yaml or drop --rubric")
    return grader, extractor


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
    if args.tolerance is not None and args.grade is None:
        raise UsageError(
            "--tolerance applies to --grade number and json:FIELD; add --grade or drop --tolerance"
        )


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
    grader: Grader | None,
    configs: dict[tuple[str, str], ConclaveConfig],
) -> str | None:
    """Why the line cannot run (in some mode), or ``None``; its overridden configs go to
    ``configs``."""
    if grader is not None and line.expected is not None:
        problem = expected_problem(grader, line.expected)
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
