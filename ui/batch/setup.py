"""What a batch knows before anything runs: the variants (configs by modes), the config of
every (line, variant) with its hash, the good and bad lines, and how to grade. Everything
here is checked up front, so ``--dry-run`` is this module and nothing more."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from conclave.actors.batch.ray_engine import RayMissing, require_ray
from conclave.actors.batch.ray_keys import LiteralKey, config_by_key_names
from conclave.config.modes import AgentMode, CollaborationMode, ModeState
from conclave.config.problems import ConfigError
from conclave.config.resolver import ResolvedConfig, RunFlags, UsageError, resolve
from conclave.config.schema import ConclaveConfig
from conclave.ui.batch.dataset import DatasetError
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
from conclave.ui.batch.tasks import BadLine, Fields, TaskLine, apply_overrides, read_tasks
from conclave.ui.text import display_path

__all__ = ["BatchSetup", "Variant", "prepare"]


@attrs.frozen(kw_only=True)
class Variant:
    """One way every task runs: a config (``--compare`` names several) in a mode
    (``--compare-modes`` names several). Results, the summary and the report call it by
    :attr:`name`: the mode's name, the config's, or ``config/mode`` when both vary."""

    name: str
    mode: ModeName
    config_name: str


@attrs.frozen(kw_only=True)
class BatchSetup:
    variants: list[Variant]
    bases: dict[str, ConclaveConfig]
    """Variant name → the config of a line without overrides."""
    base_hashes: dict[str, str]
    tasks: list[TaskLine]
    bad: list[BadLine]
    configs: dict[tuple[str, str], ConclaveConfig]
    """(id, variant name) → the config of a line with overrides."""
    hashes: dict[tuple[str, str], str]
    """(id, variant name) → the hash of a line's config with overrides."""
    epochs: int = 1
    """``--epochs``: how many times each task runs in each variant."""
    category_field: str = "category"
    """``--category-field``: the metadata key that names a task's category."""
    grader: Grader | None
    """``--grade``: for the lines without their own."""
    extractor: Extractor | None
    """``--extract``: for the lines without their own."""
    tolerance: float
    collaboration: CollaborationMode
    judge: ConclaveConfig | None = None
    """``--judge``: the config that grades ``model`` lines."""
    rubric: str = ""

    def grader_for(self, line: TaskLine) -> Grader | None:
        return line.grader if line.grader is not None else self.grader

    def extractor_for(self, line: TaskLine) -> Extractor | None:
        return line.extractor if line.extractor is not None else self.extractor

    def config_for(self, line: TaskLine, variant: Variant) -> ConclaveConfig:
        return self.configs.get((line.key, variant.name), self.bases[variant.name])

    def hash_for(self, line: TaskLine, variant: Variant) -> str:
        return self.hashes.get((line.key, variant.name), self.base_hashes[variant.name])


def prepare(args: argparse.Namespace) -> BatchSetup:
    """Check the flags, the config and every line. Raises :class:`UsageError` or
    :class:`ConfigError` for what stops the whole batch; a bad line is only listed."""
    _check_flags(args)
    modes = (
        parse_modes(args.compare_modes)
        if args.compare_modes is not None
        else [
            ModeName(
                agent_mode=AgentMode(args.agent_mode or AgentMode.MULTI.value),
                refinement=args.refinement != "off",
            )
        ]
    )
    flags = RunFlags.from_args(args)
    flags.mode_states([(m.agent_mode, m.refinement) for m in modes])  # the flags' own checks
    sources = _sources(args, flags)
    flags = _with_config_mode(flags, sources)
    states = flags.mode_states([(m.agent_mode, m.refinement) for m in modes])
    state_of = dict(zip(modes, states, strict=True))
    variants: list[Variant] = []
    bases: dict[str, ConclaveConfig] = {}
    for config_name, resolved in sources:
        for mode, state in zip(modes, states, strict=True):
            name = (
                f"{config_name}/{mode.name}"
                if len(sources) > 1 and len(modes) > 1
                else config_name
                if len(sources) > 1
                else mode.name
            )
            variants.append(Variant(name=name, mode=mode, config_name=config_name))
            bases[name] = resolved.for_flags(state)
    tasks_path = Path(args.tasks)
    try:
        fields = Fields(
            id=args.id_field or "id",
            id_named=args.id_field is not None,
            input=args.input_field,
            target=args.target_field,
        )
        lines, bad = read_tasks(tasks_path, fields)
    except OSError as exc:
        raise UsageError(
            f"cannot read {display_path(tasks_path)} ({exc.strerror or exc}); pass the path "
            "of a tasks file (JSON Lines, or CSV with a header row)"
        ) from None
    except DatasetError as exc:  # an empty file, a CSV file split by semicolons
        raise UsageError(exc.render(display_path(tasks_path))) from None
    grader, extractor = _grading_flags(args)
    judge = load_judge(args.judge) if args.judge is not None else None
    good: list[TaskLine] = []
    configs: dict[tuple[str, str], ConclaveConfig] = {}
    for line in lines:
        effective = line.grader if line.grader is not None else grader
        problem = _line_problem(line, sources, variants, state_of, effective, configs)
        if problem is None and effective is not None and effective.method is Grade.MODEL:
            problem = None if judge is not None else '"grade": "model" needs --judge JUDGE.yaml'
        if problem is None:
            good.append(line)
        else:
            bad.append(BadLine(line=line.line, reason=problem))
    bad.sort(key=lambda b: b.line)
    if args.engine == "ray":
        _check_keys_travel_by_name([*bases.values(), *configs.values(), *filter(None, [judge])])
    collaboration = flags.collaboration
    return BatchSetup(
        variants=variants,
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
        epochs=args.epochs,
        category_field=args.category_field,
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
                "--workers is for --engine local; on Ray the batch starts one worker "
                "process per CPU of the cluster: drop --workers"
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


def _check_keys_travel_by_name(configs: Sequence[ConclaveConfig]) -> None:
    """On Ray, every key must be an environment variable's (:mod:`actors.batch.ray_keys`)."""
    for config in configs:
        try:
            config_by_key_names(config, os.environ)
        except LiteralKey as exc:
            raise UsageError(f"--engine ray: {exc}") from None


def _with_config_mode(flags: RunFlags, sources: list[tuple[str, ResolvedConfig]]) -> RunFlags:
    """The flags with the configs' top-level ``mode:`` unless ``--mode`` was given; the
    configs a batch compares must agree on it, as their runs share one collaboration mode."""
    chosen = {name: flags.with_config_mode(resolved.base) for name, resolved in sources}
    modes = {f.collaboration for f in chosen.values()}
    if len(modes) > 1:
        named = ", ".join(f"{name}: {f.collaboration.value}" for name, f in chosen.items())
        raise UsageError(
            f"the compared configs set different modes ({named}); pass --mode to run them all "
            "in one"
        )
    return next(iter(chosen.values()))


def _sources(args: argparse.Namespace, flags: RunFlags) -> list[tuple[str, ResolvedConfig]]:
    """Each config the batch compares (``--compare``), or the one config, by name."""
    if not args.compare:
        resolved = resolve(flags)
        _say_where(resolved)
        return [(_config_name(resolved), resolved)]
    if args.config is not None or args.agents is not None:
        raise UsageError("--compare names the configs to run; drop --config and --agents")
    sources: list[tuple[str, ResolvedConfig]] = []
    for path in args.compare:
        resolved = resolve(attrs.evolve(flags, config=path))
        name = _config_name(resolved)
        if any(name == known for known, _ in sources):
            raise UsageError(
                f"--compare: two configs are named {name!r} (results tell configs apart by "
                "file name); rename one"
            )
        _say_where(resolved)
        sources.append((name, resolved))
    return sources


def _config_name(resolved: ResolvedConfig) -> str:
    return resolved.found.path.stem if resolved.found.path is not None else "default"


def _say_where(resolved: ResolvedConfig) -> None:
    notes = (
        resolved.source_note(len(resolved.base.agents)),
        resolved.max_cost_note(),
        resolved.headless_permission_note(),
    )
    for note in notes:
        if note is not None:
            print(f"conclave batch: {note}", file=sys.stderr)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _line_problem(
    line: TaskLine,
    sources: Sequence[tuple[str, ResolvedConfig]],
    variants: Sequence[Variant],
    state_of: Mapping[ModeName, ModeState],
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
        for config_name, resolved in sources:
            base = apply_overrides(resolved.base, line.overrides)
            overridden = attrs.evolve(resolved, base=base)
            for variant in variants:
                if variant.config_name == config_name:
                    configs[line.key, variant.name] = overridden.for_flags(state_of[variant.mode])
    except ConfigError as exc:
        return "overrides refused: " + "; ".join(p.render() for p in exc.problems)
    except UsageError as exc:
        return f"overrides refused: {exc}"
    return None
