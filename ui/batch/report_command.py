"""``conclave report RESULTS.jsonl... [--html REPORT.html]``: the figures of one or more
batches' results as Markdown tables on stdout (summary, paired differences, categories),
and with ``--html`` one self-contained page with charts and a per-sample viewer
(:mod:`ui.batch.report_html`). It reads only RESULTS: every line carries its grade and
provenance, so a report needs neither the tasks nor the configs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from conclave.config.atomic_file import write_atomically
from conclave.ui.batch.compare import paired_rows, paired_table
from conclave.ui.batch.report_data import load_results
from conclave.ui.batch.report_html import render_html
from conclave.ui.batch.summary import summary_table
from conclave.ui.batch.tally import category_table
from conclave.ui.exit_codes import ExitCode
from conclave.ui.streams import cannot_write, write_stdout
from conclave.ui.text import display_path

__all__ = ["report_command"]


def report_command(args: argparse.Namespace) -> int:
    paths = [Path(p) for p in args.results]
    try:
        data = load_results(paths, args.category_field)
    except OSError as exc:
        name = display_path(exc.filename) if exc.filename else "a results file"
        print(
            f"conclave report: cannot read {name} ({exc.strerror or exc}); pass the --out "
            "file of conclave batch",
            file=sys.stderr,
        )
        return ExitCode.USAGE
    for note in data.notes:
        print(f"conclave report: {note}", file=sys.stderr)
    if not data.tallies:
        print("conclave report: no results to report", file=sys.stderr)
        return ExitCode.USAGE
    summary = summary_table([t.summary() for t in data.tallies], first="config")
    sections = ["## Summary", summary.markdown()]
    paired = paired_rows({t.name: t.scores() for t in data.tallies})
    if paired:
        baseline = paired[0].baseline
        sections += [f"## Paired differences against {baseline}", paired_table(paired).markdown()]
    categories = category_table(data.tallies, args.category_field)
    if categories is not None:
        sections += ["## Accuracy per category", categories.markdown()]
    if args.html is not None:
        # Written before the tables are printed: a path that cannot be written is a usage
        # error with nothing on stdout, as every other bad input is.
        out = Path(args.html)
        try:
            directory = out.is_dir()
        except OSError as exc:  # a name too long for the file system
            return _unwritable(out, exc)
        if directory:
            print(
                f"conclave report: --html {display_path(out)} is a directory; pass the path "
                "of a file, such as report.html",
                file=sys.stderr,
            )
            return ExitCode.USAGE
        page = render_html(
            data, out, sources=[display_path(p) for p in paths], category_field=args.category_field
        )
        try:
            _write_whole(out, page)
        except OSError as exc:
            return _unwritable(out, exc)
    why = write_stdout("\n\n".join(sections))
    html = display_path(Path(args.html)) if args.html is not None else None
    if html is not None:
        print(f"conclave report: wrote {html}", file=sys.stderr)
    if why is not None:
        # As conclave run says it of its result: the tables had nowhere to go.
        where = f"they are in {html}" if html else "--html REPORT.html writes them to a file"
        return cannot_write("conclave report", "the tables", why, then=where)
    return ExitCode.OK


def _unwritable(out: Path, exc: OSError) -> int:
    print(
        f"conclave report: --html {display_path(out)}: {exc.strerror or exc}; pass a writable path",
        file=sys.stderr,
    )
    return ExitCode.USAGE


def _write_whole(out: Path, page: str) -> None:
    """``page`` as ``out``, whole or not at all: a failed write (a full disk) leaves no half
    page and an earlier report intact."""
    write_atomically(out, page)
