"""``conclave report --html``: one self-contained HTML file a person reads in a browser.

Everything is inline (styles, SVG charts, the samples as JSON, a small script for the
per-sample viewer): the file opens offline, can be mailed or attached to a CI run, and
loads nothing from anywhere. Text from runs (tasks, answers) reaches the page only as
escaped HTML or through ``textContent``, never as markup: an answer cannot inject script.
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import quote

from conclave.config.wording import usd
from conclave.ui.batch.charts import bars, boxes, scatter
from conclave.ui.batch.compare import paired_rows, paired_table
from conclave.ui.batch.report_data import ReportData, Sample
from conclave.ui.batch.summary import record_cost, summary_table
from conclave.ui.batch.tables import Table
from conclave.ui.batch.tally import VariantTally, category_rows, category_table

__all__ = ["render_html"]

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: right; vertical-align: top; }
th:first-child, td:first-child { text-align: left; }
.charts { display: flex; flex-wrap: wrap; gap: 1em; }
figure { margin: 0; } figcaption { font-weight: 600; margin-bottom: 0.3em; }
#sample-list tbody tr { cursor: pointer; } #sample-list tbody tr:hover { background: #eef4fb; }
#sample-list td { text-align: left; } .snippet { color: #555; max-width: 40em; }
.ok { color: #2a7d2a; } .bad { color: #b3261e; } .none { color: #777; }
#sample-view { border: 2px solid #4e79a7; padding: 1em; margin: 1em 0; border-radius: 6px; }
#sample-view pre { white-space: pre-wrap; background: #f6f6f6; padding: 0.6em; }
.answer { border-left: 4px solid #ccc; padding-left: 0.8em; margin: 0.6em 0; }
.answer.winner { border-color: #59a14f; }
"""

_SCRIPT = """
(function () {
  const samples = JSON.parse(document.getElementById("samples").textContent);
  const body = document.querySelector("#sample-list tbody");
  const filter = document.getElementById("variant-filter");
  const view = document.getElementById("sample-view");
  function cell(row, text, cls) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    row.appendChild(td);
  }
  function grade(s) {
    if (s.correct === true) return ["correct", "ok"];
    if (s.correct === false) return ["incorrect", "bad"];
    return ["not graded", "none"];
  }
  function list() {
    body.textContent = "";
    samples.forEach(function (s, i) {
      if (filter.value && filter.value !== s.variant) return;
      const row = document.createElement("tr");
      row.className = "sample";
      row.dataset.index = String(i);
      cell(row, String(s.id));
      cell(row, s.variant);
      cell(row, String(s.epoch));
      const g = grade(s);
      cell(row, g[0], g[1]);
      cell(row, (s.final_answer || "(no answer)").slice(0, 120), "snippet");
      row.addEventListener("click", function () { location.hash = "sample-" + i; });
      body.appendChild(row);
    });
  }
  function field(name, text) {
    const el = view.querySelector("[data-field=" + name + "]");
    el.textContent = text === null || text === undefined || text === "" ? "-" : String(text);
  }
  function show(i) {
    const s = samples[i];
    if (!s) { view.hidden = true; return; }
    view.hidden = false;
    field("title", s.id + " - " + s.variant + ", epoch " + s.epoch);
    field("task", s.task);
    field("metadata", JSON.stringify(s.metadata));
    field("expected", s.expected === null ? null : JSON.stringify(s.expected));
    field("final", s.final_answer);
    field("winner", s.winner);
    field("termination", s.termination);
    const g = grade(s);
    field("grade", g[0] + (s.grader ? " (" + s.grader + ")" : "") +
      (s.grade_error ? ": " + s.grade_error : ""));
    field("extracted", s.extracted_answer);
    field("judge", s.judge);
    field("duration", s.duration);
    field("cost", s.cost);
    const answers = view.querySelector("[data-field=answers]");
    answers.textContent = "";
    (s.answers || []).forEach(function (a) {
      const box = document.createElement("div");
      box.className = "answer" + (a.agent === s.winner ? " winner" : "");
      const head = document.createElement("strong");
      head.textContent = a.label + " by " + a.agent;
      const text = document.createElement("pre");
      text.textContent = a.content;
      box.appendChild(head);
      box.appendChild(text);
      answers.appendChild(box);
    });
    const votes = view.querySelector("[data-field=votes]");
    votes.textContent = "";
    Object.keys(s.votes || {}).forEach(function (voter) {
      const li = document.createElement("li");
      li.textContent = voter + " voted for " + s.votes[voter];
      votes.appendChild(li);
    });
    const log = view.querySelector("[data-field=log]");
    log.textContent = "";
    if (s.log) {
      const a = document.createElement("a");
      a.href = s.log;
      a.id = "event-log";
      a.textContent = "event log (events.jsonl)";
      log.appendChild(a);
      const hint = document.createElement("code");
      hint.textContent = "  conclave replay " + s.log_path;
      log.appendChild(hint);
    } else {
      log.textContent = "no event log (run the batch with --log-dir to keep one)";
    }
    view.scrollIntoView();
  }
  function route() {
    const m = /^#sample-(\\d+)$/.exec(location.hash);
    if (m) show(Number(m[1])); else view.hidden = true;
  }
  filter.addEventListener("change", list);
  window.addEventListener("hashchange", route);
  list();
  route();
})();
"""

_VIEW = """
<section id="sample-view" hidden>
  <h3 data-field="title"></h3>
  <p><strong>Task</strong></p><pre data-field="task"></pre>
  <p><strong>Metadata</strong> <span data-field="metadata"></span>;
     <strong>expected</strong> <span data-field="expected"></span></p>
  <p><strong>Answers</strong></p><div data-field="answers"></div>
  <p><strong>Votes</strong></p><ul data-field="votes"></ul>
  <p><strong>Final answer</strong> (winner <span data-field="winner"></span>,
     <span data-field="termination"></span>)</p><pre data-field="final"></pre>
  <p><strong>Grade</strong> <span data-field="grade"></span>;
     <strong>extracted</strong> <span data-field="extracted"></span>;
     <strong>judge</strong> <span data-field="judge"></span></p>
  <p><strong>Duration</strong> <span data-field="duration"></span>;
     <strong>cost</strong> <span data-field="cost"></span></p>
  <p data-field="log"></p>
</section>
"""


def _table_html(table: Table, table_id: str) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in table.header)
    rows = "".join(
        "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in table.rows
    )
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


def _per_run(tally: VariantTally) -> tuple[float | None, float | None]:
    """Mean cost per run (when every run had a price) and mean tokens per run."""
    ran = [s.record for s in tally.slots if s.record is not None]
    if not ran:
        return None, None
    costs = [record_cost(r) for r in ran]
    cost = (
        statistics.fmean(float(c) for c in costs if c is not None)
        if all(c is not None for c in costs)
        else None
    )
    tokens = [int(r.get("input_tokens") or 0) + int(r.get("output_tokens") or 0) for r in ran]
    return cost, statistics.fmean(tokens)


def _charts(data: ReportData) -> list[str]:
    summaries = [t.summary() for t in data.tallies]
    per_run = [_per_run(t) for t in data.tallies]
    priced = all(cost is not None for cost, _ in per_run)
    points = [
        (s.mode, float((cost if priced else tokens) or 0.0), s.accuracy or 0.0)
        for s, (cost, tokens) in zip(summaries, per_run, strict=True)
        if s.accuracy is not None
    ]
    x_label = "cost per run ($)" if priced else "tokens per run (no prices)"
    charts = [
        scatter("accuracy-cost", "Accuracy against cost, per config", points, x_label, "accuracy"),
        boxes(
            "latency",
            "Run duration, per config",
            [
                (t.name, [float(s.record.get("duration_s", 0.0)) for s in t.slots if s.record])
                for t in data.tallies
            ],
            "s",
        ),
    ]
    rows = category_rows(data.tallies)
    if rows:
        series = [
            (t.name, [rows[c][t.name].accuracy if t.name in rows[c] else None for c in rows])
            for t in data.tallies
        ]
        charts.append(bars("categories", "Accuracy per category", list(rows), series))
    return charts


def _sample_json(sample: Sample, out_dir: Path) -> dict[str, Any]:
    r = sample.record
    log = None
    if sample.log is not None:
        relative = os.path.relpath(Path(sample.log).resolve(), out_dir.resolve())
        log = "/".join(quote(part) for part in Path(relative).parts)
    judge = r.get("judge")
    cost = record_cost(r)
    return {
        "id": r.get("id"),
        "variant": sample.variant,
        "epoch": r.get("epoch", 1),
        "task": r.get("task"),
        "metadata": r.get("metadata", {}),
        "expected": r.get("expected"),
        "final_answer": r.get("final_answer"),
        "answers": [
            {"label": a.get("label"), "agent": a.get("agent"), "content": a.get("content")}
            for a in r.get("answers", [])
            if isinstance(a, Mapping)
        ],
        "votes": r.get("votes", {}),
        "winner": r.get("winner"),
        "termination": r.get("termination"),
        "correct": r.get("correct"),
        "grader": r.get("grader"),
        "grade_error": r.get("grade_error"),
        "extracted_answer": r.get("extracted_answer"),
        "judge": judge.get("final_answer") if isinstance(judge, Mapping) else None,
        "duration": f"{float(r.get('duration_s', 0.0)):.2f}s",
        "cost": usd(cost),
        "log": log,
        "log_path": sample.log,
    }


def _samples_script(samples: Sequence[Sample], out_dir: Path) -> str:
    data = json.dumps([_sample_json(s, out_dir) for s in samples], ensure_ascii=False)
    # In a <script> element only "</" can end it early: escape every one.
    return data.replace("</", "<\\/")


def render_html(data: ReportData, out: Path, *, sources: Sequence[str], category_field: str) -> str:
    """The page (see the module docstring); ``out`` is where it will be written (event log
    links are relative to it)."""
    tallies = data.tallies
    summary = summary_table([t.summary() for t in tallies], first="config")
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<title>Conclave batch report</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>Conclave batch report</h1>",
        "<p>Results: " + ", ".join(f"<code>{escape(s)}</code>" for s in sources) + "</p>",
        "<h2>Summary</h2>",
        _table_html(summary, "summary"),
    ]
    categories = category_table(tallies, category_field)
    paired = paired_rows({t.name: t.scores() for t in tallies})
    if paired:
        parts += [
            f"<h2>Paired differences against {escape(paired[0].baseline)}</h2>",
            "<p>Per task, then averaged; 95% percentile bootstrap intervals over tasks.</p>",
            _table_html(paired_table(paired), "paired"),
        ]
    if categories is not None:
        parts += ["<h2>Accuracy per category</h2>", _table_html(categories, "categories")]
    parts += ["<h2>Charts</h2>", '<div class="charts">', *_charts(data), "</div>"]
    variants = "".join(
        f'<option value="{escape(t.name)}">{escape(t.name)}</option>' for t in tallies
    )
    parts += [
        "<h2>Samples</h2>",
        "<p>Pick a run to see its task, every agent's answers, the votes, the final answer "
        "and its grade.</p>",
        f'<label>Config <select id="variant-filter"><option value="">all</option>{variants}'
        "</select></label>",
        _VIEW,
        '<table id="sample-list"><thead><tr><th>id</th><th>config</th><th>epoch</th>'
        "<th>grade</th><th>final answer</th></tr></thead><tbody></tbody></table>",
        '<script type="application/json" id="samples">'
        + _samples_script(data.samples, out.parent)
        + "</script>",
        f"<script>{_SCRIPT}</script>",
        "</body></html>",
    ]
    return "\n".join(parts)
