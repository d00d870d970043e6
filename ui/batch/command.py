"""``conclave batch TASKS.jsonl --out RESULTS.jsonl``: many headless runs from a file.

What it does, in order (docs/batch.md is the user's page):

1. Resolve the config through the one resolver (:mod:`config.resolver`: the same flags,
   discovery and checks as ``conclave run``), and finish it once for each mode
   (``--compare-modes`` names several; otherwise the mode the flags give).
2. Read TASKS: every bad line is reported with its number and skipped. Each good line's
   overrides are applied to the config before the mode table, which is then finished for
   each mode as a run's is; ``--dry-run`` stops here (exit 0 when every line is good, else 2).
3. Open RESULTS (repairing a last line cut by a crash), skip what it already holds (unless
   ``--retry-failed`` and it did not complete), and run the rest on an engine
   (:mod:`actors.batch.engine`): in this process, or ``--workers N`` processes, or Ray tasks
   (``--engine ray``, :mod:`actors.batch.ray_engine`). Every run shares its process's backend
   pool (on Ray, each run has its own). Each result is appended as its run ends.
4. Print the summary table on stdout (one row per mode) and exit: see :func:`exit_code`.

Signals: the first SIGINT, SIGTERM or SIGHUP halts the engine: nothing new starts, runs in
flight are cancelled and not written (they run again on resume), every finished result is
already on disk; the summary is printed and the exit code is 130 (143 for SIGTERM). A second
signal abandons the orderly halt.
"""

from __future__ import annotations

import argparse
import json
import re
import secrets
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import trio

from conclave.actors.batch.engine import BatchEngine, LocalEngine, WorkerEngine
from conclave.actors.batch.ray_engine import RayEngine, RayMissing, RayUnavailable, require_ray
from conclave.actors.batch.work import BatchJob, BatchWork, JobOutcome, Report
from conclave.config.modes import AgentMode, CollaborationMode, ModeState
from conclave.config.problems import ConfigError
from conclave.config.resolver import ResolvedConfig, RunFlags, UsageError, resolve
from conclave.config.schema import ConclaveConfig
from conclave.config.wording import plural
from conclave.ui.batch.grading import DEFAULT_TOLERANCE, Grade, expected_problem, is_correct
from conclave.ui.batch.progress import BatchProgress
from conclave.ui.batch.results import ResultsFile, open_results, print_notes, result_key
from conclave.ui.batch.summary import ModeSummary, render_table, summarise
from conclave.ui.batch.tasks import BadLine, TaskLine, apply_overrides, read_tasks
from conclave.ui.exit_codes import ExitCode
from conclave.ui.signals import STOP_SIGNALS, signal_exit_code
from conclave.ui.text import display_path

__all__ = ["ModeName", "batch_command", "exit_code", "parse_modes"]


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


@attrs.frozen(kw_only=True)
class _Setup:
    modes: list[ModeName]
    bases: dict[str, ConclaveConfig]
    """Mode name → the config of a line without overrides."""
    tasks: list[TaskLine]
    bad: list[BadLine]
    configs: dict[tuple[str, str], ConclaveConfig]
    """(id, mode) → the config of a line with overrides."""
    grade: Grade | None
    tolerance: float
    collaboration: CollaborationMode


def batch_command(args: argparse.Namespace) -> int:
    try:
        setup = _setup(args)
    except (UsageError, ConfigError) as exc:
        print(f"conclave batch: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    source = display_path(args.tasks)
    for bad in setup.bad:
        print(f"conclave batch: {bad.render(source)}", file=sys.stderr)
    if args.dry_run:
        print(
            f"conclave batch: {source}: {plural(len(setup.tasks), 'good line')}, "
            f"{plural(len(setup.bad), 'bad line')}; dry run, nothing ran",
            file=sys.stderr,
        )
        return ExitCode.USAGE if setup.bad else ExitCode.OK
    out = Path(args.out)
    try:
        results = open_results(out)
    except OSError as exc:
        print(
            f"conclave batch: --out {display_path(out)}: {exc.strerror or exc}; pass a "
            "writable file",
            file=sys.stderr,
        )
        return ExitCode.USAGE
    try:
        return _run_batch(args, setup, results)
    finally:
        results.close()


def _setup(args: argparse.Namespace) -> _Setup:
    if args.out is None and not args.dry_run:
        raise UsageError("--out RESULTS.jsonl is required (where results are appended)")
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
    tasks_path = Path(args.tasks)
    if args.out is not None and _same_file(tasks_path, Path(args.out)):
        raise UsageError("--out is the tasks file itself; pass another file for the results")
    if args.tolerance is not None and args.grade != "number":
        raise UsageError("--tolerance applies to --grade number; add it or drop --tolerance")
    modes = (
        parse_modes(args.compare_modes)
        if args.compare_modes is not None
        else [ModeName(agent_mode=AgentMode(args.agent_mode), refinement=args.refinement == "on")]
    )
    flags = RunFlags.from_args(args)
    flags.mode_states([(m.agent_mode, m.refinement) for m in modes])  # the flags' own checks
    resolved = resolve(flags)
    flags = flags.with_config_mode(resolved.base)  # the config's mode: unless --mode
    states = flags.mode_states([(m.agent_mode, m.refinement) for m in modes])
    _say_where(resolved)
    bases = {m.name: resolved.for_flags(state) for m, state in zip(modes, states, strict=True)}
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
    return _Setup(
        modes=modes,
        bases=bases,
        tasks=good,
        bad=bad,
        configs=configs,
        grade=grade,
        tolerance=DEFAULT_TOLERANCE if args.tolerance is None else args.tolerance,
        collaboration=flags.collaboration,
    )


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


def _log_dir(root: Path | None, key: str, mode: str) -> Path | None:
    if root is None:
        return None
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", key)[:64]
    return root / f"{safe}-{mode}-{secrets.token_hex(3)}"


@attrs.define
class _Session:
    """What this invocation ran, and the newest record of every (id, mode)."""

    records: dict[tuple[str, str], dict[str, Any]]
    jobs: list[BatchJob] = attrs.field(factory=list)
    lines: list[tuple[TaskLine, ModeName]] = attrs.field(factory=list)
    spent: float = 0.0
    budget_hit: bool = False
    signals: list[int] = attrs.field(factory=list)
    runs: list[tuple[float, float]] = attrs.field(factory=list)
    """(started, reported) wall-clock times of each run this session."""


def _run_batch(args: argparse.Namespace, setup: _Setup, results: ResultsFile) -> int:
    print_notes(results.notes)
    session = _Session(records=dict(results.existing))
    log_root = Path(args.log_dir) if args.log_dir is not None else None
    skipped = 0
    for line in setup.tasks:
        for mode in setup.modes:
            earlier = session.records.get(result_key(line.id, mode.name))
            if earlier is not None and not (
                args.retry_failed and earlier.get("termination") != "completed"
            ):
                skipped += 1
                continue
            config = setup.configs.get((line.key, mode.name), setup.bases[mode.name])
            session.jobs.append(
                BatchJob(
                    key=f"{line.key} ({mode.name})",
                    task=line.task,
                    config=config,
                    mode=setup.collaboration,
                    log_dir=_log_dir(log_root, line.key, mode.name),
                )
            )
            session.lines.append((line, mode))
    if skipped:
        print(
            f"conclave batch: {plural(skipped, 'run')} already in {display_path(args.out)}; "
            "skipped",
            file=sys.stderr,
        )
    progress = BatchProgress(len(session.jobs), sys.stderr, terminal=sys.stderr.isatty())
    engine: BatchEngine = (
        RayEngine(args.concurrency, address=args.address, say=progress.say)
        if args.engine == "ray"
        else WorkerEngine(args.concurrency, args.workers)
        if args.workers > 1
        else LocalEngine(args.concurrency)
    )
    started = time.time()
    write_failure: list[OSError] = []

    def report(outcome: JobOutcome) -> None:
        if write_failure:  # stopped: what workers still send is not written
            return
        line, mode = session.lines[outcome.index]
        result = outcome.result
        correct = None
        if setup.grade is not None and line.expected is not None:
            correct = is_correct(
                setup.grade, result["final_answer"], line.expected, setup.tolerance
            )
        record = {"id": line.id, "mode": mode.name, **result, "node": outcome.node}
        record["correct"] = correct
        session.runs.append((outcome.started, time.time()))
        try:
            results.append(record)
        except OSError as exc:
            write_failure.append(exc)
            engine.halt()
            return
        session.records[result_key(line.id, mode.name)] = record
        cost = result.get("cost_usd")
        progress.record(completed=result["termination"] == "completed", cost=cost)
        if cost is not None:
            session.spent += cost
        if args.max_cost is not None and session.spent >= args.max_cost and not session.budget_hit:
            session.budget_hit = True
            engine.stop_starting()
            progress.say(
                f"--max-cost ${args.max_cost:.2f} reached (${session.spent:.4f} spent); "
                "starting no more runs, those in flight finish"
            )

    unavailable: list[RayUnavailable] = []
    if session.jobs:
        try:
            trio.run(_drive, engine, BatchWork(jobs=tuple(session.jobs)), report, session, progress)
        except* RayUnavailable as group:
            unavailable.extend(e for e in group.exceptions if isinstance(e, RayUnavailable))
    progress.finish()
    if unavailable:
        print(f"conclave batch: {unavailable[0]}", file=sys.stderr)
        return ExitCode.USAGE
    wall = time.time() - started
    for lost in engine.lost:
        print(f"conclave batch: {lost}; its runs in flight were not written", file=sys.stderr)
    if write_failure:
        exc = write_failure[0]
        print(
            f"conclave batch: cannot append to {display_path(args.out)} "
            f"({exc.strerror or exc}); stopped, and the runs in flight were not written",
            file=sys.stderr,
        )
    rows = _summaries(setup, session)
    print(render_table(rows))
    if args.summary_json is not None:
        _write_summary_json(Path(args.summary_json), rows, session, wall)
    return exit_code(
        rows,
        setup.bad,
        session.signals,
        lost=bool(engine.lost) or bool(write_failure),
    )


async def _drive(
    engine: BatchEngine,
    work: BatchWork,
    report: Report,
    session: _Session,
    progress: BatchProgress,
) -> None:
    """Run the engine, halting it at the first stop signal and abandoning it at the second."""
    with trio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async with trio.open_nursery() as nursery:

            async def on_signals() -> None:
                async for signum in signals:
                    session.signals.append(signum)
                    if len(session.signals) == 1:
                        progress.say(
                            "stopping; runs in flight are cancelled and will run again on resume"
                        )
                        engine.halt()
                    else:
                        nursery.cancel_scope.cancel()

            nursery.start_soon(on_signals)
            await engine.run(work, report)
            nursery.cancel_scope.cancel()


def _summaries(setup: _Setup, session: _Session) -> list[ModeSummary]:
    rows = []
    for mode in setup.modes:
        records = [session.records.get(result_key(t.id, mode.name)) for t in setup.tasks]
        grades: list[bool | None] = []
        for task, record in zip(setup.tasks, records, strict=True):
            if setup.grade is None or task.expected is None or record is None:
                grades.append(None)
            else:
                grades.append(
                    is_correct(
                        setup.grade, record.get("final_answer"), task.expected, setup.tolerance
                    )
                )
        rows.append(summarise(mode.name, records, grades))
    return rows


def _write_summary_json(
    path: Path, rows: Sequence[ModeSummary], session: _Session, wall: float
) -> None:
    """The table's figures, and this session's: its runs, its wall time, and the time from
    the first run's start to the last run's end (start-up left out: what a rate divides)."""
    runs = session.runs
    running = max(end for _, end in runs) - min(start for start, _ in runs) if runs else 0.0
    data = {
        "modes": [row.to_json() for row in rows],
        "session": {"runs": len(runs), "wall_s": round(wall, 3), "runs_wall_s": round(running, 3)},
    }
    try:
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        print(
            f"conclave batch: --summary-json {display_path(path)}: {exc.strerror or exc}",
            file=sys.stderr,
        )


def exit_code(
    rows: Sequence[ModeSummary], bad: Sequence[BadLine], signals: Sequence[int], *, lost: bool
) -> int:
    """130/143 when a signal stopped it; else 2 when a line was bad; else 1 when a run
    failed (or a worker died, or RESULTS could not be written); else 3 when a run timed out
    or ``--max-cost`` left runs unstarted; else 0: every task completed."""
    if signals:
        return signal_exit_code(signals[0])
    if bad:
        return ExitCode.USAGE
    if lost or any(row.failed for row in rows):
        return ExitCode.FAILED
    if any(row.timed_out or row.not_run for row in rows):
        return ExitCode.TIMEOUT
    return ExitCode.OK
