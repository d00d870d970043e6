"""The text summary line on stderr: how the run ended and how the answer was decided, how
many agents were excluded, what it cost and where the log is; one short line at any size."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conclave.actors.coordination.state import Answer
from conclave.actors.run.result import DecidedBy, RunResult, Termination
from conclave.actors.run.usage import AgentUsage, RunUsage
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from conclave.ui.summary import summary
from tests.cli.helpers import TASK, write_config


def _result(agents: int = 3, **changes: Any) -> RunResult:
    ids = [f"agent-{i:05d}" for i in range(1, agents + 1)]
    fields: dict[str, Any] = {
        "final_answer": "the answer",
        "winner": ids[0],
        "presenter": ids[0],
        "strategy": "winner_present",
        "answers": [Answer(label=f"agent{i}.1", agent=a, content="x") for i, a in enumerate(ids)],
        "votes": dict.fromkeys(ids, "agent1.1"),
        "rounds": 2 * agents,
        "llm_calls": 2 * agents + 1,
        "restarts": 0,
        "termination": Termination.COMPLETED,
        "failed_agents": {},
        "log_dir": ".conclave/runs/x",
        "duration_s": 1.5,
        "decided_by": DecidedBy.VOTES,
        **changes,
    }
    return RunResult(**fields)


@pytest.mark.parametrize(
    ("decided_by", "words"),
    [
        (DecidedBy.VOTES, "(decided by votes)"),
        (DecidedBy.NO_VOTES, "(decided without votes)"),
        (DecidedBy.OVERRIDE, "(chosen by override)"),
        (DecidedBy.TIMEOUT_BEST_SO_FAR, "(best answer so far at the timeout)"),
        (None, "(no answer)"),
    ],
)
def test_the_summary_says_how_the_answer_was_decided(
    decided_by: DecidedBy | None, words: str
) -> None:
    assert f"winner agent-00001 {words};" in summary(_result(decided_by=decided_by))


def test_after_an_override_the_summary_names_the_chosen_agent_and_the_vote_it_overrode() -> None:
    overridden = _result(presenter="agent-00003", decided_by=DecidedBy.OVERRIDE)

    line = summary(overridden)

    assert line.startswith(
        "completed: winner agent-00003 (chosen by override of the vote's winner agent-00001);"
    )


def test_the_summary_counts_the_excluded_agents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(
        tmp_path / "c.yaml",
        [{"id": "good", "latency": 0}, {"id": "bad", "latency": 0, "misbehave": "no_call"}],
    )

    assert main(["run", "--config", str(cfg), TASK]) == ExitCode.OK

    assert ", 1 excluded, " in capsys.readouterr().err


def test_the_summary_gives_the_reason_a_run_failed() -> None:
    failed = _result(
        final_answer=None,
        winner=None,
        termination=Termination.FAILED,
        decided_by=None,
        failure_reason="the coordinator crashed 5 times in 60 s",
    )

    assert summary(failed).startswith("failed: winner - (no answer);")
    assert "; failed: the coordinator crashed 5 times in 60 s;" in summary(failed)


def test_the_summary_stays_one_short_line_at_50_000_agents() -> None:
    ids = [f"agent-{i:05d}" for i in range(1, 50_001)]
    huge = _result(50_000, failed_agents=dict.fromkeys(ids, "3 tries failed: no call"))

    line = summary(huge)

    assert "\n" not in line
    assert len(line) < 200
    assert "50,000 answers, 50,000 excluded, 100,001 LLM calls" in line


def test_the_summary_says_what_share_of_the_prompt_tokens_came_from_the_cache() -> None:
    total = AgentUsage(input_tokens=4000, cache_read_tokens=3000, calls=4, cached_share=0.75)

    line = summary(_result(usage=RunUsage(total=total)))

    assert ", 75% of prompt tokens cached" in line


def test_the_summary_says_nothing_of_a_cache_no_call_read() -> None:
    total = AgentUsage(input_tokens=4000, calls=4, cached_share=0.0)

    assert "cached" not in summary(_result(usage=RunUsage(total=total)))
