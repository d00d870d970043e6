"""What the WriteTracker costs on a big tree: its baseline index, the index after the
writing, and the list and diff it writes.

A tree of ``files`` text files (10,000 by default, 100 directories, about 8 KB each: source
code's sizes) is made once; each repeat then times, on the warm page cache:

* **baseline**: ``TrackerState.walk`` before anything was tracked: every file read once,
  hashed (SHA-256), small text files kept for the diff;
* **after, nothing changed**: the second walk, which reads no file whose ``lstat`` did not
  move: a walk and an ``lstat`` per file;
* **after, 10 changed + diff**: 10 files modified, one deleted, one renamed, one made; the
  second walk, the comparison, the list and the diff written.

The medians are reported against the mtime-only walk the tracker used before (an ``lstat``
per file): what tracking by content costs on top. Prints a table and writes JSON.

    .venv/bin/python -m conclave.benchmarks.tracker_bench [--files N] [--repeats R] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from conclave.actors.workspace.tracker import TrackerState
from conclave.benchmarks.bench_args import measure_and_report, positive_int
from conclave.benchmarks.machine import machine_info
from conclave.config.schema.context import ContextPath, ContextPermission

__all__ = ["main", "run_benchmark"]

MTIME_WALK = "mtime-only walk (before)"
BASELINE = "baseline"
UNCHANGED = "after, nothing changed"
CHANGED = "after, 10 changed + diff"
MEASURES = (MTIME_WALK, BASELINE, UNCHANGED, CHANGED)


def make_tree(root: Path, files: int, *, seed: int = 0) -> None:
    """``files`` text files of source-like lines under ``root``, in 100 directories."""
    rng = random.Random(seed)
    words = ["def", "return", "self", "value", "import", "class", "for", "in", "if", "None"]
    for i in range(files):
        folder = root / f"pkg{i % 100}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = (" ".join(rng.choices(words, k=8)) for _ in range(rng.randint(50, 350)))
        (folder / f"module{i}.py").write_text("\n".join(lines) + "\n")


def _mtime_walk(root: Path) -> int:
    seen = 0
    for directory, _, names in os.walk(root):
        for name in names:
            os.stat(os.path.join(directory, name), follow_symlinks=False)
            seen += 1
    return seen


def _change(root: Path, round_: int) -> None:
    for i in range(10):
        path = root / f"pkg{i}" / f"module{i}.py"
        path.write_text(path.read_text() + f"# changed {round_}\n")
    gone, moved = 20 + 100 * round_, 30 + 100 * round_  # each repeat its own files
    (root / "pkg20" / f"module{gone}.py").unlink()
    (root / "pkg30" / f"module{moved}.py").rename(root / "pkg30" / f"moved{moved}.py")
    (root / "pkg40" / f"made{round_}.py").write_text("new\n")


def _timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return (time.perf_counter() - started) * 1000


def run_benchmark(
    files: int = 10_000, repeats: int = 3, progress: Callable[[str], object] = lambda _: None
) -> dict[str, Any]:
    times: dict[str, list[float]] = {name: [] for name in MEASURES}
    with tempfile.TemporaryDirectory(prefix="conclave-tracker-bench-") as tmp:
        root = Path(tmp).resolve() / "tree"
        make_tree(root, files)
        logs = Path(tmp).resolve() / "log"
        logs.mkdir()
        context = ContextPath(path=root, permission=ContextPermission.WRITE)
        _mtime_walk(root)  # warm the page cache and the dentries
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        for repeat in range(repeats):
            times[MTIME_WALK].append(_timed(lambda: _mtime_walk(root)))
            state = TrackerState(context_paths=(context,), list_dir=logs)
            started = time.perf_counter()
            state.baseline = state.walk()
            times[BASELINE].append((time.perf_counter() - started) * 1000)
            times[UNCHANGED].append(_timed(state.walk))
            _change(root, repeat)
            started = time.perf_counter()
            writes = state.conclude(state.walk())
            times[CHANGED].append((time.perf_counter() - started) * 1000)
            assert writes.count == 13, writes
            progress(f"repeat {repeat + 1}/{repeats} done")
    rows = [
        {
            "measure": name,
            "median_ms": round(statistics.median(values), 2),
            "best_ms": round(min(values), 2),
        }
        for name, values in times.items()
    ]
    return {
        "benchmark": "tracker_bench",
        "machine": machine_info(),
        "parameters": {"files": files, "repeats": repeats, "bytes": size},
        "rows": rows,
    }


def format_table(report: dict[str, Any]) -> str:
    params = report["parameters"]
    title = (
        f"tracker_bench: a tree of {params['files']:,} files ({params['bytes'] / 1e6:.1f} MB), "
        f"median of {params['repeats']} repeats"
    )
    width = max(len(r["measure"]) for r in report["rows"])
    lines = [f"{'measure'.ljust(width)}  median ms      best"]
    lines += [
        f"{r['measure'].ljust(width)}  {r['median_ms']:9.2f}  {r['best_ms']:8.2f}"
        for r in report["rows"]
    ]
    return "\n".join([title, *lines])


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m conclave.benchmarks.tracker_bench",
        description="What the WriteTracker's indexes cost on a big tree.",
    )
    p.add_argument("--files", type=positive_int, default=10_000, metavar="N")
    p.add_argument("--repeats", type=positive_int, default=3, metavar="R")
    p.epilog = "repeats must stay under files / 100 (each deletes and moves its own files)"
    p.add_argument("--json", default="bench-results/tracker_bench.json", metavar="PATH")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return measure_and_report(
        args.json, lambda: run_benchmark(args.files, args.repeats, progress=print), format_table
    )


if __name__ == "__main__":
    raise SystemExit(main())
