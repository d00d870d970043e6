"""What the REPL prints: Markdown answers, run summaries, and one progress line per agent."""

from __future__ import annotations

import attrs
from prompt_toolkit.formatted_text import StyleAndTextTuples

from conclave.actors.agent.status import AgentStatus
from conclave.actors.events.view import AgentView, RunView
from conclave.actors.run.result import RunResult, Termination
from conclave.actors.workspace.writes import Writes
from conclave.ui.repl.render import (
    MAX_PROGRESS_ROWS,
    agent_line,
    answer_block,
    fragments_text,
    markdown,
    progress_lines,
)


def _styles_of(fragments: StyleAndTextTuples, text: str) -> set[str]:
    return {style for style, fragment, *_ in fragments if text in fragment}


def test_markdown_headings_emphasis_and_code_are_styled_and_the_text_kept() -> None:
    answer = "# Title\n\nSome **bold** text and `code`.\n\n```python\nprint(1)\n```\n"
    fragments = markdown(answer)
    assert fragments_text(fragments) == answer
    assert any("heading" in s for s in _styles_of(fragments, "Title"))
    assert any("strong" in s for s in _styles_of(fragments, "bold"))
    assert any("backtick" in s for s in _styles_of(fragments, "`code`"))
    assert any("name" in s for s in _styles_of(fragments, "print"))  # highlighted as Python


def test_an_escape_sequence_in_an_answer_is_shown_not_obeyed() -> None:
    text = fragments_text(markdown("before \x1b[2J after"))
    assert "\x1b" not in text
    assert "\\x1b[2J" in text


def _result(**changes: object) -> RunResult:
    base = RunResult(
        final_answer="**Paperclips** hold paper.",
        winner="a1",
        presenter="a2",
        strategy="winner_present",
        answers=[],
        votes={"a1": "agent1.1", "a2": "agent1.1", "a3": "agent2.1"},
        rounds=3,
        llm_calls=7,
        restarts=0,
        termination=Termination.COMPLETED,
        failed_agents={},
        log_dir=None,
        duration_s=1.5,
        input_tokens=1200,
        output_tokens=300,
    )
    return attrs.evolve(base, **changes)  # type: ignore[arg-type]


def test_the_answer_is_followed_by_winner_tally_tokens_and_presenter() -> None:
    text = fragments_text(answer_block(_result()))
    assert text.startswith("**Paperclips** hold paper.\n")
    assert "completed: winner a1" in text
    assert "votes: agent1.1: 2, agent2.1: 1" in text
    assert "tokens: 1,200 in / 300 out, presented by a2" in text


def test_a_run_that_wrote_files_shows_the_write_footer() -> None:
    writes = Writes.of(new=["notes.txt"], modified=["README.md"])
    text = fragments_text(answer_block(_result(writes=writes)))
    assert "notes.txt" in text
    assert "README.md" in text


def test_a_run_without_an_answer_says_so() -> None:
    text = fragments_text(answer_block(_result(final_answer=None, winner=None, votes={})))
    assert "the run produced no answer" in text


def test_each_agent_line_says_what_it_is_doing() -> None:
    agent = AgentView(agent="a1", status=AgentStatus.WORKING, round=1)
    assert agent_line(agent) == "thinking"
    assert agent_line(attrs.evolve(agent, round=2)) == "thinking (round 2)"
    assert agent_line(attrs.evolve(agent, tool="read_file")) == "running read_file"
    assert agent_line(attrs.evolve(agent, status=AgentStatus.ANSWERED, answer="agent1.1")) == (
        "answered agent1.1"
    )
    assert agent_line(attrs.evolve(agent, status=AgentStatus.VOTED, vote="agent2.1")) == (
        "voted for agent2.1"
    )
    assert agent_line(attrs.evolve(agent, status=AgentStatus.RESTARTING)) == "restarting"
    assert agent_line(attrs.evolve(agent, status=AgentStatus.EXCLUDED, excluded="bad key")) == (
        "failed: bad key"
    )
    assert agent_line(attrs.evolve(agent, status=AgentStatus.STOPPED, vote="agent2.1")) == (
        "voted for agent2.1"
    )


def test_progress_lists_a_few_agents_and_counts_the_rest() -> None:
    view = RunView()
    for i in range(1000):
        view.agents[f"a{i}"] = AgentView(
            agent=f"a{i}", status=AgentStatus.WORKING, round=1, llm_calls=1, input_tokens=10
        )
    text = fragments_text(progress_lines(view, status="Running", elapsed=2.5))
    lines = text.splitlines()
    assert lines[0] == "Running · 2.5s · 1,000 LLM calls · 10,000 tokens · 0 answers"
    assert len(lines) == 1 + MAX_PROGRESS_ROWS + 1
    assert lines[-1] == f"  … and {1000 - MAX_PROGRESS_ROWS:,} more: 992 thinking"
