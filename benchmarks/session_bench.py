"""What sessions cost: resuming a long session, and appending one entry.

* **resume**: a session of T turns (each a user turn of ~200 characters and its run with a
  ~1,500-character answer, a mode change every 50 turns; ``T=1000`` by default) is opened as
  ``conclave -c`` opens it: the file read and decoded line by line through the codec, the
  conversation folded, and the history the next run is shown built. Median and worst of R
  repeats (the file is in the page cache after the first: what a person resuming a session
  they just left gets).
* **append**: one entry written as a turn does (a user turn; a run with its answer), each a
  single ``write`` of one line; median, 99th percentile and worst of N appends.

Each row has its target (issue 25: resume < 0.3 s, append < 1 ms, held by the median and
the 99th percentile; the worst append is shown without a target) and whether it was met; the
exit code is 1 when one was not.

    .venv/bin/python -m conclave.benchmarks.session_bench [--turns T] [--repeats R]
        [--appends N] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from conclave.actors.run.termination import Termination
from conclave.actors.session.entries import ModeChanged, RunRecorded, UserTurn
from conclave.actors.session.recorder import SessionRecorder
from conclave.actors.session.store import Session, open_session
from conclave.benchmarks.bench_args import write_report
from conclave.benchmarks.machine import machine_info
from conclave.config.modes import ModeSource, ModeState
from conclave.config.schema.modes import CollaborationMode

__all__ = ["main", "measure"]

RESUME_TARGET_S = 0.3
APPEND_TARGET_MS = 1.0
QUESTION = "How should the build cache be keyed so that a change to one package rebuilds only "
ANSWER = "Key each package's artifacts by the hash of its sources and its dependencies' keys. "
COLUMNS = ("measure", "value", "target", "met")


def _fill(session: Session, turns: int) -> None:
    for i in range(turns):
        if i % 50 == 0:
            mode = CollaborationMode.PLAN if (i // 50) % 2 else CollaborationMode.DEFAULT
            session.append(ModeChanged.of(ModeState(collaboration=mode), ModeSource.SHORTCUT))
        turn = session.append(UserTurn(text=f"{QUESTION * 2}(turn {i})"))
        session.append(
            RunRecorded(
                turn_id=turn.id,
                run_id=f"20261127-120000-{i:06x}",
                log_dir=f".conclave/runs/20261127-120000-{i:06x}",
                termination=Termination.COMPLETED,
                winner="scripted1",
                final_answer=ANSWER * 18,
                input_tokens=1_000 + i,
            )
        )


def _resume(root: Path, session_id: str) -> float:
    started = time.perf_counter()
    with open_session(root, session_id) as session:
        history = SessionRecorder(session).conversation.history()
    elapsed = time.perf_counter() - started
    assert history, "a resumed session has history"
    return elapsed


def _appends(session: Session, count: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"user turn": [], "run with its answer": []}
    for i in range(count):
        started = time.perf_counter()
        turn = session.append(UserTurn(text=f"{QUESTION * 2}(appended {i})"))
        middle = time.perf_counter()
        session.append(
            RunRecorded(
                turn_id=turn.id,
                run_id=f"run-{i}",
                log_dir=None,
                termination=Termination.COMPLETED,
                winner="scripted1",
                final_answer=ANSWER * 18,
                input_tokens=2_000,
            )
        )
        ended = time.perf_counter()
        times["user turn"].append(middle - started)
        times["run with its answer"].append(ended - middle)
    return times


def measure(*, turns: int, repeats: int, appends: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="conclave-session-bench-") as scratch:
        root = Path(scratch)
        with open_session(root) as session:
            _fill(session, turns)
        size = session.path.stat().st_size
        resumes = [_resume(root, session.id) for _ in range(repeats)]
        with open_session(root, session.id) as reopened:
            times = _appends(reopened, appends)
    rows = [
        {
            "measure": f"resume {turns:,} turns, median of {repeats} (s)",
            "value": statistics.median(resumes),
            "target": f"< {RESUME_TARGET_S}",
            "met": statistics.median(resumes) < RESUME_TARGET_S,
        },
        {
            "measure": f"resume {turns:,} turns, worst (s)",
            "value": max(resumes),
            "target": f"< {RESUME_TARGET_S}",
            "met": max(resumes) < RESUME_TARGET_S,
        },
    ]
    for kind, seconds in times.items():
        ms = sorted(s * 1e3 for s in seconds)
        p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
        for name, value in (("median", statistics.median(ms)), ("p99", p99)):
            rows.append(
                {
                    "measure": f"append a {kind}, {name} (ms)",
                    "value": value,
                    "target": f"< {APPEND_TARGET_MS}",
                    "met": value < APPEND_TARGET_MS,
                }
            )
        # The worst of thousands is the machine's (a scheduling gap, a collection), shown
        # so that it is not hidden, and held to no target.
        rows.append(
            {"measure": f"append a {kind}, worst (ms)", "value": ms[-1], "target": "-", "met": None}
        )
    return {
        "turns": turns,
        "entries": turns * 2 + (turns + 49) // 50,
        "file_bytes": size,
        "repeats": repeats,
        "appends": appends,
        "rows": rows,
        "machine": machine_info(),
    }


def format_report(report: dict[str, Any]) -> str:
    cells = [
        (
            row["measure"],
            f"{row['value']:.4f}",
            row["target"],
            {True: "yes", False: "NO", None: "-"}[row["met"]],
        )
        for row in report["rows"]
    ]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(COLUMNS)]
    lines = [
        f"sessions: {report['turns']:,} turns, {report['entries']:,} entries, "
        f"{report['file_bytes'] / 1e6:.1f} MB",
        "  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths, strict=True)),
    ]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conclave.benchmarks.session_bench")
    parser.add_argument("--turns", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--appends", type=int, default=2_000)
    parser.add_argument("--json", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    report = measure(turns=args.turns, repeats=args.repeats, appends=args.appends)
    print(format_report(report))
    if args.json is not None:
        write_report(args.json, json.dumps(report, indent=2) + "\n")
    return 0 if all(row["met"] is not False for row in report["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
