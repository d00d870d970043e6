"""Output formats: ``text`` (answer on stdout, progress on stderr), ``json`` (one object),
``stream-json`` (one event per line, ending with a ``result`` event holding that object)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import REQUIRED_KEYS, TASK, parse_json, write_config


def _run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[dict[str, Any], str]:
    code = main(["run", "--output-format", "json", *args, TASK])
    out, err = capsys.readouterr()
    assert code == ExitCode.OK, err
    return parse_json(out), err


def test_json_is_one_object_with_the_documented_keys_and_types(
    fast_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_dir = tmp_path / "run"
    data, _ = _run_json(capsys, "--config", str(fast_config), "--log-dir", str(log_dir))

    assert set(data) >= REQUIRED_KEYS
    assert isinstance(data["final_answer"], str)
    assert data["winner"] in {"agent-1", "agent-2", "agent-3"}
    assert data["presenter"] == data["winner"]
    assert data["strategy"] == "winner_present"
    assert data["termination"] == "completed"
    assert data["failed_agents"] == {}
    assert data["log_dir"] == str(log_dir)
    assert (log_dir / "events.jsonl").is_file()
    assert isinstance(data["duration_s"], float)
    for key in ("rounds", "llm_calls", "restarts"):
        assert isinstance(data[key], int)
    assert data["llm_calls"] == 7


def test_json_answers_are_label_agent_content_records(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, _ = _run_json(capsys, "--config", str(fast_config))

    answers = data["answers"]
    assert [set(a) for a in answers] == [{"label", "agent", "content"}] * 3
    assert {a["agent"]: a["label"] for a in answers} == {
        "agent-1": "agent1.1",
        "agent-2": "agent2.1",
        "agent-3": "agent3.1",
    }
    assert all(TASK in a["content"] for a in answers)


def test_json_votes_map_each_voter_to_the_label_it_voted_for(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, _ = _run_json(capsys, "--config", str(fast_config))

    labels = {a["label"] for a in data["answers"]}
    assert set(data["votes"]) == {"agent-1", "agent-2", "agent-3"}
    assert set(data["votes"].values()) <= labels


def test_json_lists_excluded_agents_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(
        tmp_path / "c.yaml",
        [{"id": "good", "latency": 0}, {"id": "bad", "latency": 0, "misbehave": "no_call"}],
    )

    data, _ = _run_json(capsys, "--config", str(cfg))

    assert set(data["failed_agents"]) == {"bad"}
    assert data["failed_agents"]["bad"].startswith("3 tries failed")
    assert data["termination"] == "completed"


def test_json_stdout_holds_nothing_but_the_object(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["run", "--output-format", "json", "--config", str(fast_config), TASK])

    out = capsys.readouterr().out
    assert out.strip().startswith("{")
    assert out.strip().endswith("}")
    json.loads(out)


def test_stream_json_is_one_typed_event_per_line_ending_with_the_result(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--output-format", "stream-json", "--config", str(fast_config), TASK])

    assert code == ExitCode.OK
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert all(next(iter(line)) == "type" for line in lines)
    types = [line["type"] for line in lines]
    assert types[0] == "run_started"
    assert {"answer_added", "vote_added", "voting_complete", "final_answer_produced"} <= set(types)
    assert types.count("result") == 1
    result = lines[-1]
    assert result["type"] == "result"
    assert set(result) >= REQUIRED_KEYS
    assert result["termination"] == "completed"
    answered = [line["label"] for line in lines if line["type"] == "answer_added"]
    assert sorted(answered) == sorted(a["label"] for a in result["answers"])


def test_text_prints_the_answer_on_stdout_and_progress_on_stderr(
    fast_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--config", str(fast_config), "--log-dir", str(tmp_path / "r"), TASK])

    out, err = capsys.readouterr()
    assert code == ExitCode.OK
    assert out.startswith(f"On “{TASK}”")
    assert "answered agent1.1" in err
    assert "voted for agent" in err
    assert "voting complete: winner" in err
    assert "final answer by" in err
    assert f"log {tmp_path / 'r'}/events.jsonl" in err


def test_without_a_config_three_scripted_agents_run_and_stderr_says_so_once(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The one test on the built-in default: 200 ms per call, so about a second.
    code = main(["run", "--output-format", "json", TASK])

    out, err = capsys.readouterr()
    assert code == ExitCode.OK
    assert err.count("no --config given; running 3 scripted agents") == 1
    assert "no API key needed" in err
    assert len(parse_json(out)["answers"]) == 3


def test_refinement_off_synthesizes_with_two_calls_per_agent_plus_one(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, _ = _run_json(capsys, "--config", str(fast_config), "--refinement", "off")

    assert data["strategy"] == "synthesize"
    assert data["llm_calls"] == 2 * 3 + 1
    assert data["restarts"] == 0


def test_an_explicit_strategy_flag_wins_over_the_refinement_off_default(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, _ = _run_json(
        capsys,
        "--config",
        str(fast_config),
        "--refinement",
        "off",
        "--final-answer-strategy",
        "winner_reuse",
    )

    assert data["strategy"] == "winner_reuse"
    assert data["llm_calls"] == 2 * 3


def test_single_agent_mode_with_refinement_off_is_one_call(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, _ = _run_json(
        capsys,
        "--config",
        str(fast_config),
        "--agent-mode",
        "single",
        "--agent",
        "agent-2",
        "--refinement",
        "off",
    )

    assert [a["agent"] for a in data["answers"]] == ["agent-2"]
    assert data["llm_calls"] == 1
    assert data["final_answer"] == data["answers"][0]["content"]


def test_visibility_and_in_flight_policy_flags_reach_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(
        tmp_path / "six.yaml", [{"id": f"a{i}", "seed": i, "latency": 0} for i in range(1, 7)]
    )

    data, _ = _run_json(
        capsys, "--config", str(cfg), "--visibility", "islands:2", "--in-flight-policy", "cancel"
    )

    islands = [{"a1", "a2"}, {"a3", "a4"}, {"a5", "a6"}]
    author = {a["label"]: a["agent"] for a in data["answers"]}
    assert len(data["votes"]) == 6
    for voter, label in data["votes"].items():
        assert any({voter, author[label]} <= island for island in islands)
