"""``conclave replay EVENTS.jsonl`` prints a finished run's timeline, then a table of its
agents from the RunView its events build; a last line cut off mid-write (a crash) is
reported and skipped, damage anywhere else is an error; kinds it does not know are skipped
and counted; a file of several runs shows each.

Files that are not readable logs: test_replay_failures.py; escape sequences:
test_replay_escapes.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import TASK


@pytest.fixture
def events(fast_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """The event log of a finished three-agent run."""
    log_dir = tmp_path / "run"
    assert (
        main(["run", "--config", str(fast_config), "--log-dir", str(log_dir), TASK]) == ExitCode.OK
    )
    capsys.readouterr()
    return log_dir / "events.jsonl"


def timeline_and_table(out: str) -> tuple[list[str], list[str]]:
    """Replay's output for one run: the timeline lines, and the table after the blank line."""
    timeline, _, table = out.partition("\n\n")
    return timeline.splitlines(), table.splitlines()


def test_replay_prints_the_timeline_of_a_finished_run(
    events: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["replay", str(events)])

    out, err = capsys.readouterr()
    assert code == ExitCode.OK
    assert err == ""
    lines, _ = timeline_and_table(out)
    assert all(re.match(r"^\[ *\d+\.\d{3}s\] ", line) for line in lines)
    assert "run started: 3 agents (agent-1, agent-2, agent-3), strategy winner_present" in lines[0]
    assert re.search(r"run ended: completed, winner agent-\d$", lines[-1])
    text = "\n".join(lines)
    for label in ("agent1.1", "agent2.1", "agent3.1"):
        assert f"answered {label}" in text
    assert "voted for" in text
    assert "voting complete: winner" in text
    assert "final answer by" in text
    assert "interrupted" not in text


def test_replay_ends_a_run_with_a_table_of_its_agents_from_the_run_view(
    events: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(events)]) == ExitCode.OK

    _, table = timeline_and_table(capsys.readouterr().out)
    assert table[0].split() == [
        "agent", "status", "LLM", "calls", "tokens", "in", "tokens", "out", "answer", "vote"
    ]  # fmt: skip
    rows = {row.split()[0]: row.split()[1:] for row in table[1:]}
    assert set(rows) == {"agent-1", "agent-2", "agent-3"}
    for agent, (status, calls, tokens_in, tokens_out, answer, vote) in rows.items():
        assert status in {"presented", "stopped"}, agent
        assert int(calls) >= 2 and int(tokens_in.replace(",", "")) > 0 and int(tokens_out) > 0
        assert re.fullmatch(r"agent\d\.1", answer) and re.fullmatch(r"agent\d\.1", vote)
    assert [row[0] for row in rows.values()].count("presented") == 1


def test_replay_verbose_adds_rounds_and_llm_calls(
    events: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", "--verbose", str(events)]) == ExitCode.OK

    out = capsys.readouterr().out
    assert "round 1 offers new_answer" in out
    assert "→ LLM (round)" in out
    assert "← LLM (present): ok" in out


def test_replay_reports_and_skips_a_last_line_cut_off_mid_write(
    events: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = events.read_text(encoding="utf-8").splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2], encoding="utf-8")

    code = main(["replay", str(cut)])

    out, err = capsys.readouterr()
    assert code == ExitCode.OK
    assert f"conclave: line {len(lines)} of {cut} was cut off mid-write; skipped" in err
    assert "final answer by" in out  # the lines before the cut one are all shown


def test_replay_of_a_log_that_stops_before_the_run_ended_says_it_was_interrupted(
    events: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = events.read_text(encoding="utf-8").splitlines(keepends=True)
    ended = next(i for i, line in enumerate(lines) if json.loads(line)["kind"] == "run_ended")
    partial = tmp_path / "partial.jsonl"
    partial.write_text("".join(lines[:ended]), encoding="utf-8")

    code = main(["replay", str(partial)])

    out = capsys.readouterr().out
    assert code == ExitCode.OK
    assert "run ended" not in out
    lines, table = timeline_and_table(out)
    assert lines[-1] == "(the log ends before the run did: it was interrupted)"
    assert len(table) == 4  # the agents as the log left them


def test_replay_refuses_a_log_damaged_in_the_middle(
    events: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = events.read_text(encoding="utf-8").splitlines(keepends=True)
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text("".join(lines[:3]) + "{not json\n" + "".join(lines[3:]), encoding="utf-8")

    code = main(["replay", str(damaged)])

    assert code == ExitCode.USAGE
    assert f"{damaged}:4: not a valid event" in capsys.readouterr().err


def test_replay_skips_events_of_unknown_kinds_saying_how_many_and_exits_0(
    events: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = events.read_text(encoding="utf-8").splitlines(keepends=True)
    future = '{"kind":"from_a_newer_version","at":0.5,"detail":"x"}\n'
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join([lines[0], future, *lines[1:], future]), encoding="utf-8")

    code = main(["replay", str(mixed)])

    out, err = capsys.readouterr()
    assert code == ExitCode.OK
    assert err.splitlines() == [
        "conclave: skipped 2 events of unknown kinds (from_a_newer_version); "
        "a newer conclave wrote them: upgrade to see them"
    ]
    assert "run ended: completed" in out


def test_replay_of_a_run_directory_reads_its_events_jsonl(
    events: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["replay", str(events.parent)])

    assert code == ExitCode.OK
    assert "run ended: completed" in capsys.readouterr().out


def test_replay_of_a_file_holding_two_runs_shows_each_from_its_own_start(
    events: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = events.read_text(encoding="utf-8").splitlines()
    later = [json.dumps({**data, "at": data["at"] + 1000.0}) for data in map(json.loads, lines)]
    both = tmp_path / "both.jsonl"
    both.write_text("\n".join(lines + later) + "\n", encoding="utf-8")
    pid = json.loads(lines[0])["pid"]

    code = main(["replay", str(both)])

    out, err = capsys.readouterr()
    assert code == ExitCode.OK
    lines = out.splitlines()
    [header] = [i for i, line in enumerate(lines) if line.startswith("── run 2")]
    assert re.fullmatch(
        rf"── run 2 in this file: pid {pid}, started [-\d]+ [:\d]+ ──", lines[header]
    )
    assert lines[:header] == lines[header + 1 :]  # the same run, timed from its own start
    assert "this file holds 2 runs" in err


def test_replay_says_when_a_run_before_the_next_stopped_early(
    events: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = events.read_text(encoding="utf-8").splitlines(keepends=True)
    ended = next(i for i, line in enumerate(lines) if json.loads(line)["kind"] == "run_ended")
    both = tmp_path / "both.jsonl"
    both.write_text("".join(lines[:ended] + lines), encoding="utf-8")

    main(["replay", str(both)])

    out = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(out) if line.startswith("── run 2"))
    # The first run's timeline, that line, then its agents' table (a header and 3 rows).
    assert out[header - 6] == "(the log ends before the run did: it was interrupted)"
    assert out[header - 5] == ""
    assert out[header - 4].startswith("agent ")


OLD_LOG = Path(__file__).parent / "logs" / "ring_run_before_voters_were_named.jsonl"
"""A five-agent ring run's log (its run's events; the kernel's left out) as the version
before ``votes_cleared`` named its voters wrote it: strings for statuses and purposes, a
``votes_cleared`` with a count, ``agent_excluded`` without ``withdrawn_vote``."""


def test_replay_reads_a_log_written_before_events_named_whose_votes_were_cleared(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["replay", str(OLD_LOG)])

    out, err = capsys.readouterr()
    assert (code, err) == (ExitCode.OK, "")
    lines, table = timeline_and_table(out)
    assert any(line.endswith("] agent2.1 cleared 2 vote(s)") for line in lines)
    assert re.search(r"run ended: completed, winner a2$", lines[-1])
    rows = {row.split()[0]: row.split()[1:] for row in table[1:]}
    votes = {agent: row[-1] for agent, row in rows.items()}
    assert votes == {"a1": "agent2.1", "a2": "agent2.1", "a3": "agent4.1", "a4": "-", "a5": "-"}
    assert [rows[agent][0] for agent in ("a4", "a5")] == ["excluded", "excluded"]
