"""``conclave batch TASKS.jsonl --out RESULTS.jsonl``: many headless runs from a file.

What it does, in order (docs/batch.md is the user's page):

1. Resolve the config through the one resolver (:mod:`config.resolver`: the same flags,
   discovery and checks as ``conclave run``), and finish it once for each mode
   (``--compare-modes`` names several; otherwise the mode the flags give).
2. Read TASKS: every bad line is reported with its number and skipped. Each good line's
   overrides are applied to the config before the mode table, which is then finished for
   each mode as a run's is; ``--dry-run`` stops here (exit 0 when every line is good, else 2).
3. Lock RESULTS (:mod:`ui.batch.lock`: one writer), open it (repairing a last line cut by a
   crash), skip what it already holds (:mod:`ui.batch.plan`: unless ``--retry-failed`` and it
   did not complete, or it was made with another config), and run the rest on an engine
   (:mod:`actors.batch.engine`): in this process, or ``--workers N`` processes, or Ray actors
   (``--engine ray``, :mod:`actors.batch.ray_engine`). Every run shares its process's backend
   pool (on Ray, its Ray worker process's). Each result is appended as its run ends.
4. Print the summary table on stdout (one row per mode) and exit: see :func:`exit_code`.
   A stdout that cannot take it (closed, full) is said on stderr, and exits 1.

Signals: the first SIGINT, SIGTERM or SIGHUP halts the engine: nothing new starts, runs in
flight are cancelled and not written (they run again on resume), every finished result is
already on disk; the summary is printed and the exit code is 130 (143 for SIGTERM). A second
signal abandons the orderly halt.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import stat
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import trio

from conclave.actors.batch.engine import BatchEngine, LocalEngine, WorkerEngine
from conclave.actors.batch.ray_engine import RayEngine, RayUnavailable
from conclave.actors.batch.version import installed_version
from conclave.actors.batch.work import BatchJob, BatchWork, JobOutcome, JudgeRequest, Report
from conclave.actors.llm.cache import CacheStatistics
from conclave.config.problems import ConfigError
from conclave.config.resolver import UsageError
from conclave.config.wording import plural
from conclave.ui.batch.cache_summary import CacheSummary, count_cache
from conclave.ui.batch.compare import PairedRow, paired_rows, render_paired
from conclave.ui.batch.failures import failure_limit
from conclave.ui.batch.grading import Grade
from conclave.ui.batch.judge import judge_request
from conclave.ui.batch.lock import ResultsLocked, lock_results
from conclave.ui.batch.modes import ModeName, parse_modes
from conclave.ui.batch.plan import ChangedConfig, ConfigChanged, Plan, PlannedRun, plan_runs
from conclave.ui.batch.progress import BatchProgress
from conclave.ui.batch.record import grade_answer, result_record
from conclave.ui.batch.results import (
    NotResults,
    ResultKey,
    ResultsFile,
    open_results,
    print_notes,
    result_key,
)
from conclave.ui.batch.setup import BatchSetup, prepare
from conclave.ui.batch.summary import ModeSummary, record_cost, render_table, spent_on
from conclave.ui.batch.tally import Slot, VariantTally, category_of, render_categories
from conclave.ui.batch.tasks import BadLine, TaskLine
from conclave.ui.exit_codes import ExitCode
from conclave.ui.signals import STOP_SIGNALS, signal_exit_code
from conclave.ui.streams import cannot_write, write_stdout
from conclave.ui.text import display_path

__all__ = ["ModeName", "batch_command", "exit_code", "parse_modes"]


def batch_command(args: argparse.Namespace) -> int:
    try:
        setup = prepare(args)
    except (UsageError, ConfigError) as exc:
        print(f"conclave batch: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    source = display_path(args.tasks)
    for bad in setup.bad:
        print(f"conclave batch: {bad.render(source)}", file=sys.stderr)
    if ungraded := _nothing_to_grade(args, setup):
        print(f"conclave batch: {ungraded}", file=sys.stderr)
    if args.dry_run:
        print(
            f"conclave batch: {source}: {plural(len(setup.tasks), 'good line')}, "
            f"{plural(len(setup.bad), 'bad line')}; dry run, nothing ran",
            file=sys.stderr,
        )
        return ExitCode.USAGE if setup.bad else ExitCode.OK
    if not setup.tasks:
        # Said before RESULTS is made: an empty results file and a table of zeros would
        # read as a batch that ran.
        print(
            f"conclave batch: {source}: every line is bad "
            f"({plural(len(setup.bad), 'bad line')}, above); nothing ran",
            file=sys.stderr,
        )
        return ExitCode.USAGE
    for flag, directory in (("--log-dir", args.log_dir), ("--cache", args.cache)):
        if directory is not None and (refused := _unwritable_directory(flag, directory)):
            print(f"conclave batch: {refused}", file=sys.stderr)
            return ExitCode.USAGE
    if args.summary_json is not None and (refused := _unwritable_file(args.summary_json)):
        print(f"conclave batch: {refused}", file=sys.stderr)
        return ExitCode.USAGE
    out = Path(args.out)
    shown = display_path(out)
    try:
        lock = lock_results(out)
    except ResultsLocked as exc:
        print(
            f"conclave batch: --out {shown} is being written by another batch ({exc.holder}); "
            "wait for it to end, stop it, or pass another --out",
            file=sys.stderr,
        )
        return ExitCode.USAGE
    except OSError as exc:
        print(
            f"conclave batch: --out {shown}: cannot lock it ({exc.strerror or exc}); pass a "
            "file in a writable directory",
            file=sys.stderr,
        )
        return ExitCode.USAGE
    try:
        try:
            results = open_results(out)
        except NotResults as exc:
            print(f"conclave batch: --out: {exc}", file=sys.stderr)
            return ExitCode.USAGE
        except OSError as exc:
            print(
                f"conclave batch: --out {shown}: {exc.strerror or exc}; pass a writable file",
                file=sys.stderr,
            )
            return ExitCode.USAGE
        try:
            return _run_batch(args, setup, results)
        finally:
            results.close()
    finally:
        lock.release()


def _unwritable_directory(flag: str, directory: str) -> str | None:
    """Create ``directory`` now and say why it cannot hold files, if it cannot: every run
    writes there, and a log directory that cannot be made would fail each run in turn (a
    cache that cannot be written, miss every call) without a word of why."""
    path = Path(directory)
    shown = f"{flag} {display_path(path)}"
    try:
        if path.exists() and not path.is_dir():
            return f"{shown}: is a file, not a directory; pass a directory (created if missing)"
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a name too long, a file on the way, no permission
        return f"{shown}: cannot create it ({exc.strerror or exc}); pass a writable directory"
    if not os.access(path, os.W_OK | os.X_OK):
        return f"{shown}: cannot write in it (permission denied); pass a writable directory"
    return None


def _unwritable_file(summary_json: str) -> str | None:
    """Why ``--summary-json`` could not be written when the batch ends, said before any run:
    found only at the end, after every run, the figures would be lost."""
    path = Path(summary_json)
    shown = f"--summary-json {display_path(path)}"
    try:
        found, parent = _stat(path), _stat(path.parent)
    except OSError as exc:  # a name too long, a loop of links, no permission
        return (
            f"{shown}: cannot use it ({exc.strerror or exc}); pass the path of a file in a "
            "writable directory"
        )
    if found is not None and stat.S_ISDIR(found.st_mode):
        return f"{shown} is a directory; pass the path of a file, such as summary.json"
    if parent is None or not stat.S_ISDIR(parent.st_mode):
        return f"{shown}: its directory does not exist; create it or pass another path"
    return None


def _stat(path: Path) -> os.stat_result | None:
    """``path``'s status, ``None`` when nothing is there; ``OSError`` when it cannot be
    looked at (``Path.is_dir`` raises that on some Pythons and says ``False`` on others)."""
    try:
        return path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None


def _judge_for(setup: BatchSetup, line: TaskLine) -> JudgeRequest | None:
    grader = setup.grader_for(line)
    if grader is None or grader.method is not Grade.MODEL or setup.judge is None:
        return None
    return judge_request(setup.judge, setup.rubric, line.task, line.expected)


def _log_dir(root: Path | None, run: PlannedRun) -> Path | None:
    if root is None:
        return None
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", run.line.key)[:64]
    variant = re.sub(r"[^A-Za-z0-9._-]", "_", run.variant.name)[:64]
    epoch = "" if run.epoch == 1 else f"-e{run.epoch}"
    return root / f"{safe}-{variant}{epoch}-{secrets.token_hex(3)}"


@attrs.define
class _Session:
    """What this invocation ran, and the newest record of every (id, variant, epoch)."""

    records: dict[ResultKey, dict[str, Any]]
    spent: float
    """What the whole batch has cost: the lines RESULTS held, and this session's runs."""
    runs: tuple[PlannedRun, ...] = ()
    budget_hit: bool = False
    failed: int = 0
    finished: int = 0
    failing: bool = False
    """``--max-failures`` was reached."""
    cache: dict[tuple[str, int], CacheStatistics] = attrs.field(factory=dict)
    """(host, pid) → that process's response cache figures, the newest reported."""
    signals: list[int] = attrs.field(factory=list)
    timings: list[tuple[float, float]] = attrs.field(factory=list)
    """(started, reported) wall-clock times of each run this session."""


def _changed_policy(args: argparse.Namespace) -> ChangedConfig:
    if args.rerun_changed:
        return ChangedConfig.RERUN
    return ChangedConfig.KEEP if args.force else ChangedConfig.REFUSE


def _plan(args: argparse.Namespace, setup: BatchSetup, results: ResultsFile) -> Plan | None:
    """The runs to start; ``None`` (said on stderr) when RESULTS was made with another
    config and neither ``--rerun-changed`` nor ``--force`` says what to do."""
    try:
        plan = plan_runs(
            setup, results.existing, retry_failed=args.retry_failed, changed=_changed_policy(args)
        )
    except ConfigChanged as exc:
        print(f"conclave batch: --out {display_path(args.out)}: {exc}", file=sys.stderr)
        return None
    shown = display_path(args.out)
    if plan.skipped:
        print(
            f"conclave batch: {plural(plan.skipped, 'run')} already in {shown}; skipped",
            file=sys.stderr,
        )
    if plan.rerun_changed:
        print(
            f"conclave batch: {plural(plan.rerun_changed, 'run')} in {shown} made with another "
            "config; running them again (--rerun-changed)",
            file=sys.stderr,
        )
    return plan


def _run_batch(args: argparse.Namespace, setup: BatchSetup, results: ResultsFile) -> int:
    print_notes(results.notes)
    plan = _plan(args, setup, results)
    if plan is None:
        return ExitCode.USAGE
    session = _Session(records=dict(results.existing), spent=results.spent_usd)
    log_root = Path(args.log_dir) if args.log_dir is not None else None
    runs = plan.runs
    if args.max_cost is not None and session.spent >= args.max_cost and runs:
        session.budget_hit = True
        print(
            f"conclave batch: --max-cost ${_limit(args.max_cost)} already reached by the runs in "
            f"{display_path(args.out)} (${session.spent:.4f} spent); starting no runs, raise "
            "--max-cost to go on",
            file=sys.stderr,
        )
        runs = ()
    session.runs = runs
    jobs = tuple(
        BatchJob(
            key=run.label,
            task=run.line.task,
            config=setup.config_for(run.line, run.variant),
            mode=setup.collaboration,
            log_dir=_log_dir(log_root, run),
            history=run.line.history,
            retries=args.retries,
            cache_scope=f"epoch {run.epoch}",
            conclave_version=installed_version(),
            judge=_judge_for(setup, run.line),
        )
        for run in runs
    )
    progress = BatchProgress(len(jobs), sys.stderr, terminal=sys.stderr.isatty())
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
        run = session.runs[outcome.index]
        line, variant = run.line, run.variant
        result = outcome.result
        record = result_record(
            line=line,
            variant=variant.name,
            epoch=run.epoch,
            mode=variant.mode.name,
            config_name=variant.config_name,
            config=setup.config_for(line, variant),
            config_hash=setup.hash_for(line, variant),
            outcome=outcome,
            grader=setup.grader_for(line),
            extractor=setup.extractor_for(line),
            tolerance=setup.tolerance,
        )
        session.timings.append((outcome.started, time.time()))
        try:
            results.append(record)
        except OSError as exc:
            write_failure.append(exc)
            engine.halt()
            return
        session.records[result_key(line.id, variant.name, run.epoch)] = record
        cost = record_cost(record)
        progress.record(completed=result["termination"] == "completed", cost=cost)
        session.spent += spent_on(record)
        if outcome.cache is not None:
            count_cache(session.cache, (outcome.node, outcome.pid), outcome.cache)
        session.finished += 1
        if result["termination"] == "failed":
            if not session.failed:
                # Said once: a batch failing wholesale (a wrong key, an endpoint down) would
                # otherwise say only how many failed, and why only inside RESULTS.
                progress.say(
                    f"{line.id} ({variant.name}) failed: {result.get('failure_reason')}; every "
                    "failed run's reason is its line's failure_reason"
                )
            session.failed += 1
        limit = failure_limit(args.max_failures) if args.max_failures is not None else None
        if (
            limit is not None
            and not session.failing
            and limit.reached(session.failed, session.finished)
        ):
            session.failing = True
            engine.stop_starting()
            progress.say(
                f"--max-failures: {session.failed:,} of {session.finished:,} runs failed "
                f"(the limit is {limit.describe()}); starting no more runs, those in flight "
                "finish"
            )
        if args.max_cost is not None and session.spent >= args.max_cost and not session.budget_hit:
            session.budget_hit = True
            engine.stop_starting()
            progress.say(
                f"--max-cost ${_limit(args.max_cost)} reached (${session.spent:.4f} spent by the "
                "batch); starting no more runs, those in flight finish"
            )

    unavailable: list[RayUnavailable] = []
    if jobs:
        try:
            cache_dir = Path(args.cache) if args.cache is not None else None
            work = BatchWork(jobs=jobs, cache_dir=cache_dir)
            trio.run(_drive, engine, work, report, session, progress)
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
    tallies = _tallies(setup, session)
    rows = [tally.summary() for tally in tallies]
    paired = paired_rows({tally.name: tally.scores() for tally in tallies})
    sections = [render_table(rows, first="config" if args.compare else "mode")]
    categories = render_categories(tallies, args.category_field)
    if categories is not None:
        sections.append(categories)
    if paired:
        sections.append(render_paired(paired))
    cache = _cache_summary(args, session)
    if cache is not None:
        sections.append(cache.line())
    printed = _print_summary("\n\n".join(sections), Path(args.out))
    if args.summary_json is not None:
        _write_summary_json(Path(args.summary_json), rows, paired, cache, session, wall)
    return exit_code(
        rows,
        setup.bad,
        session.signals,
        lost=bool(engine.lost) or bool(write_failure),
        unprinted=not printed,
    )


def _print_summary(summary: str, out: Path) -> bool:
    """Print the summary on stdout; ``False`` (said on stderr, as ``conclave run`` says it of
    its result) when stdout cannot take it: closed before the batch started (``>&-``) or
    full. A reader that left (``| head``) ends it quietly, as for a run."""
    why = write_stdout(summary)
    return True if why is None else _cannot_print(out, why)


def _cannot_print(out: Path, why: str) -> bool:
    shown = display_path(out)
    then = f"the results are in {shown} (conclave report {shown} prints the summary)"
    cannot_write("conclave batch", "the summary", why, then=then)
    return False


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


def _cache_summary(args: argparse.Namespace, session: _Session) -> CacheSummary | None:
    if args.cache is None:
        return None
    hits = sum(s.hits for s in session.cache.values())
    misses = sum(s.misses for s in session.cache.values())
    return CacheSummary(path=display_path(args.cache), hits=hits, misses=misses)


def _tallies(setup: BatchSetup, session: _Session) -> list[VariantTally]:
    """Each variant's results, graded again from the lines' current expected and graders."""
    tallies = []
    for variant in setup.variants:
        slots = []
        for task in setup.tasks:
            category = category_of(task.metadata, setup.category_field)
            for epoch in range(1, setup.epochs + 1):
                record = session.records.get(result_key(task.id, variant.name, epoch))
                correct = None
                if record is not None:
                    correct = grade_answer(
                        setup.grader_for(task),
                        setup.extractor_for(task),
                        record.get("final_answer"),
                        task.expected,
                        setup.tolerance,
                        record.get("judge"),
                    ).correct
                slots.append(
                    Slot(
                        task=task.key,
                        epoch=epoch,
                        category=category,
                        record=record,
                        correct=correct,
                    )
                )
        tallies.append(VariantTally(name=variant.name, epochs=setup.epochs, slots=tuple(slots)))
    return tallies


def _write_summary_json(
    path: Path,
    rows: Sequence[ModeSummary],
    paired: Sequence[PairedRow],
    cache: CacheSummary | None,
    session: _Session,
    wall: float,
) -> None:
    """The table's figures, and this session's: its runs, its wall time, and the time from
    the first run's start to the last run's end (start-up left out: what a rate divides)."""
    runs = session.timings
    running = max(end for _, end in runs) - min(start for start, _ in runs) if runs else 0.0
    data = {
        "modes": [row.to_json() for row in rows],
        "paired": [row.to_json() for row in paired],
        "cache": None if cache is None else cache.to_json(),
        "session": {"runs": len(runs), "wall_s": round(wall, 3), "runs_wall_s": round(running, 3)},
    }
    try:
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        print(
            f"conclave batch: --summary-json {display_path(path)}: {exc.strerror or exc}",
            file=sys.stderr,
        )


def _nothing_to_grade(args: argparse.Namespace, setup: BatchSetup) -> str | None:
    """Why ``--grade`` will grade nothing, when no line has an expected answer: a dataset
    that names it otherwise (``target``, ``answer``) would end with an empty accuracy column
    and no word why."""
    grader = setup.grader
    if grader is None or grader.method is Grade.MODEL or not setup.tasks:
        return None
    if any(task.expected is not None or task.grader is not None for task in setup.tasks):
        return None
    return (
        f"--grade {args.grade}: no line has an expected answer (the field "
        f"{args.target_field!r}), so nothing will be graded; --target-field KEY names the "
        "field that holds it"
    )


def exit_code(
    rows: Sequence[ModeSummary],
    bad: Sequence[BadLine],
    signals: Sequence[int],
    *,
    lost: bool,
    unprinted: bool = False,
) -> int:
    """130/143 when a signal stopped it; else 2 when a line was bad; else 1 when a run
    failed (or a worker died, or RESULTS could not be written, or stdout could not take the
    summary: ``unprinted``); else 3 when a run timed out or ``--max-cost`` left runs
    unstarted; else 0: every task completed."""
    if signals:
        return signal_exit_code(signals[0])
    if bad:
        return ExitCode.USAGE
    if lost or unprinted or any(row.failed for row in rows):
        return ExitCode.FAILED
    if any(row.timed_out or row.not_run for row in rows):
        return ExitCode.TIMEOUT
    return ExitCode.OK


def _limit(usd: float) -> str:
    """A ``--max-cost`` as said back: cents, or as many decimals as a smaller one needs (a
    limit of $0.000001 must not read $0.00)."""
    return f"{usd:.2f}" if usd >= 0.01 else f"{usd:.8f}".rstrip("0")
