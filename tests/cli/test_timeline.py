"""The lines live progress and ``conclave replay`` print for events, and their agent table."""

from __future__ import annotations

from typing import Any

import pytest

from conclave.actors.agent.events import LlmRequestFinished, LlmRequestStarted
from conclave.actors.coordination.events import AnswerAdded, RunStarted, VoteAdded
from conclave.actors.events.view import RunView
from conclave.actors.llm.protocol import CallOutcome, CallPurpose, StopReason
from conclave.actors.paor.subagent_events import SubAgentFinished, SubAgentStarted
from conclave.actors.workspace.events import (
    ContextPathsChanged,
    FinalWorkspaceSaved,
    PresentingForWrites,
    SnapshotPublished,
)
from conclave.actors.workspace.writes import Writes
from conclave.config.schema import FinalAnswerStrategy
from conclave.config.schema.paor import SubAgentKind
from conclave.runtime import ChildStopped, Event, HowStopped, TapFailed
from conclave.ui.timeline import agent_table, describe


def started(agents: int) -> RunStarted:
    ids = tuple(f"a{i}" for i in range(agents))
    return RunStarted(
        at=0.0, task="t", agents=ids, anonymous_ids=ids, strategy=FinalAnswerStrategy.SYNTHESIZE
    )


def test_a_small_run_names_every_agent() -> None:
    assert describe(started(3)) == "run started: 3 agents (a0, a1, a2), strategy synthesize"


def test_a_big_run_names_five_agents_and_counts_the_rest() -> None:
    line = describe(started(50_000))
    assert line == (
        "run started: 50,000 agents (a0, a1, a2, a3, a4 and 49,995 more), strategy synthesize"
    )


def test_a_child_that_crashes_while_being_stopped_is_shown_with_its_error() -> None:
    event = ChildStopped(
        at=0.0,
        supervisor="run",
        child="agent:a1",
        how=HowStopped.CRASHED,
        error="RuntimeError: boom",
    )
    assert describe(event) == "agent:a1 crashed while run stopped it (RuntimeError: boom)"


@pytest.mark.parametrize("how", [HowStopped.GRACEFUL, HowStopped.KILLED])
def test_a_child_stopped_without_a_crash_is_not_a_line(how: HowStopped) -> None:
    event = ChildStopped(at=0.0, supervisor="run", child="agent:a1", how=how)
    assert describe(event, verbose=True) is None


def test_a_crash_while_stopping_spanning_lines_is_shown_on_one() -> None:
    event = ChildStopped(
        at=0.0, supervisor="run", child="agent:a1", how=HowStopped.CRASHED, error="OSError: a\n  b"
    )
    assert describe(event) == "agent:a1 crashed while run stopped it (OSError: a b)"


def test_a_failed_tap_is_shown_on_one_line_with_what_it_raised() -> None:
    event = TapFailed(at=0.0, tap="Recorder", error="ValueError: bad\nthings\x1b[2J")
    assert describe(event) == "event tap Recorder removed: it raised ValueError: bad things\\x1b[2J"


def finished(**fields: Any) -> LlmRequestFinished:
    return LlmRequestFinished(at=0.0, agent="a1", purpose=CallPurpose.ROUND, **fields)


def test_a_finished_llm_call_shows_its_tokens_cached_tokens_and_model() -> None:
    event = finished(
        outcome=CallOutcome.OK,
        input_tokens=1200,
        output_tokens=300,
        cache_read_tokens=1000,
        model="gpt-test-1",
        stop_reason=StopReason.TOOL_USE,
    )
    assert describe(event, verbose=True) == (
        "a1 ← LLM (round): ok, 1,200 in / 300 out tokens, 1,000 cached, model gpt-test-1"
    )


def test_a_reply_cut_at_the_output_limit_says_so() -> None:
    event = finished(outcome=CallOutcome.OK, output_tokens=4096, stop_reason=StopReason.MAX_TOKENS)
    line = describe(event, verbose=True)
    assert line is not None and line.endswith("4,096 out tokens, cut at the output limit")


def test_a_failed_llm_call_shows_its_error_on_one_line() -> None:
    event = finished(outcome=CallOutcome.ERROR, error="401 Unauthorized:\n key [REDACTED] refused")
    assert describe(event, verbose=True) == (
        "a1 ← LLM (round): error: 401 Unauthorized: key [REDACTED] refused"
    )


def view_with(*events: Event) -> RunView:
    return RunView.from_events([started(2), *events])


def test_the_agent_table_has_a_header_and_a_row_per_agent_aligned() -> None:
    view = view_with(
        LlmRequestStarted(at=1.0, agent="a0", purpose=CallPurpose.ROUND),
        finished(outcome=CallOutcome.OK, input_tokens=1234, output_tokens=56),
        AnswerAdded(at=2.0, agent="a0", label="a0.1", content="x"),
    )
    view.apply(VoteAdded(at=3.0, voter="a1", label="a0.1", reason="r"))

    assert agent_table(view) == [
        "agent  status  LLM calls  tokens in  tokens out  answer  vote",
        "a0     idle            1          0           0  a0.1    -",
        "a1     idle            0      1,234          56  -       a0.1",
    ]


def test_the_agent_table_shows_the_model_column_once_a_backend_names_one() -> None:
    view = view_with(finished(outcome=CallOutcome.OK, model="gpt-test-1"))

    table = agent_table(view)

    assert table[0].endswith("  model")
    assert table[1].endswith("  -") and table[2].endswith("  gpt-test-1")


def test_the_agent_table_neutralises_what_the_log_says() -> None:
    view = view_with(AnswerAdded(at=2.0, agent="a0", label="a0.1\x1b[2J", content="x"))

    assert "\x1b" not in "".join(agent_table(view))
    assert "a0.1\\x1b[2J" in agent_table(view)[1]


def test_a_view_without_agents_has_no_table() -> None:
    assert agent_table(RunView()) == []


def test_a_presentation_run_for_writes_says_who_and_why() -> None:
    event = PresentingForWrites(
        at=0.0,
        presenter="a1",
        strategy=FinalAnswerStrategy.WINNER_REUSE,
        reason="writable paths need a writer",
    )
    assert describe(event) == (
        "a1 presents to write the context paths: writable paths need a writer"
    )


def test_workspace_steps_are_verbose_detail() -> None:
    events = [
        SnapshotPublished(at=0.0, agent="a1", label="agent1.1", path="/w/snapshots/agent1.1"),
        ContextPathsChanged(
            at=0.0,
            files=Writes.of(new=["a.txt"], deleted=["b.txt"]).files,
            list_file="/w/writes.txt",
        ),
        FinalWorkspaceSaved(at=0.0, agent="a1", path="/w/final"),
    ]
    assert [describe(event) for event in events] == [None, None, None]
    assert [describe(event, verbose=True) for event in events] == [
        "a1's workspace for agent1.1 published at /w/snapshots/agent1.1",
        "context paths changed: 1 new, 1 deleted (listed in /w/writes.txt)",
        "a1's workspace saved with the final answer at /w/final",
    ]


def test_a_sub_agent_starting_names_its_step_task_and_share() -> None:
    event = SubAgentStarted(
        at=1.0,
        agent="lead",
        subagent="lead/1.look",
        agent_kind=SubAgentKind.EXPLORE,
        step="look",
        task="understand this\ncodebase",
        tokens=246,
        seconds=24.75,
    )
    assert describe(event) == (
        "lead sub-agent lead/1.look (explore) started on step look "
        "(share: 246 tokens, 24.8s): understand this codebase"
    )


def test_a_sub_agent_lost_after_crashing_says_so() -> None:
    event = SubAgentFinished(
        at=1.0,
        agent="lead",
        subagent="lead/1.look",
        agent_kind=SubAgentKind.EXPLORE,
        step="look",
        end=None,
        summary="The explore sub-agent for step look crashed 2 times\nmore",
        tokens=0,
        seconds=0.5,
        crashes=2,
    )
    assert describe(event) == (
        "lead sub-agent lead/1.look (explore) lost after crashing (0 tokens, 0.5s, "
        "restarted 2x): The explore sub-agent for step look crashed 2 times"
    )
