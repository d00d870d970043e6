"""The REPL's text as prompt-toolkit formatted text: answers (Markdown), run summaries and the
live progress lines.

Pure functions of their inputs, so the layout redraws from them and tests read them. Text
from models and agents is neutralised (:func:`ui.timeline.neutralise`): an escape sequence in
an answer must not drive the terminal.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

import attrs
from prompt_toolkit.formatted_text import PygmentsTokens, StyleAndTextTuples, to_formatted_text
from pygments.lexers.markup import MarkdownLexer  # type: ignore[import-untyped]

from conclave.actors.agent.status import AgentStatus
from conclave.actors.events.loop import ToolCallFinished, ToolCallStarted
from conclave.actors.events.view import AgentView, RunView
from conclave.actors.run.result import RunResult, Termination
from conclave.config.wording import plural
from conclave.ui.summary import summary, writes_footer
from conclave.ui.timeline import neutralise

__all__ = [
    "MAX_PROGRESS_ROWS",
    "ProgressSummary",
    "agent_line",
    "answer_block",
    "fragments_text",
    "markdown",
    "progress_block",
    "progress_lines",
    "result_block",
    "summarise",
    "tool_finished_line",
    "tool_started_line",
]

MAX_PROGRESS_ROWS = 8
"""Agents listed one per line while a run executes; the rest are counted by what they do."""
STREAM_LINES = 4
"""Lines of the streaming agent's text shown under the agents, as it arrives."""
TOOL_PREVIEW = 100
"""Characters of a tool call's arguments, output or error shown in the transcript."""

_LEXER = MarkdownLexer()


def fragments_text(fragments: Iterable[tuple[str, str] | tuple[str, str, object]]) -> str:
    """The plain text of formatted text (tests, the transcript)."""
    return "".join(fragment[1] for fragment in fragments)


def markdown(text: str) -> StyleAndTextTuples:
    """``text`` highlighted as Markdown: headings, emphasis, code and lists stand out, and
    fenced code blocks are highlighted in their language. The markup stays in place, so
    what is copied from the screen is the answer as written."""
    tokens = list(_LEXER.get_tokens(neutralise(text)))
    return to_formatted_text(PygmentsTokens(tokens))


def answer_block(result: RunResult, *, shown: str | None = None) -> StyleAndTextTuples:
    """The final answer (rendered; ``shown`` instead when given: a plan as a person reads
    it) followed by who won, how, and what it cost."""
    block: StyleAndTextTuples = []
    text = shown if shown is not None else result.final_answer
    if text is not None:
        block += markdown(text.rstrip("\n"))
        block.append(("", "\n"))
    block += result_block(result)
    return block


def result_block(result: RunResult) -> StyleAndTextTuples:
    style = "class:summary" if result.termination is Termination.COMPLETED else "class:warning"
    lines: StyleAndTextTuples = [(style, "● " + neutralise(summary(result)) + "\n")]
    if result.votes:
        tally = Counter(result.votes.values())
        shown = ", ".join(f"{label}: {n}" for label, n in tally.most_common(5))
        more = len(tally) - 5
        shown += f" and {more:,} more" if more > 0 else ""
        lines.append(("class:summary.detail", f"  votes: {shown}\n"))
    if result.input_tokens is None or result.output_tokens is None:
        tokens = "unknown (a server reported no usage)"
    else:
        tokens = f"{result.input_tokens:,} in / {result.output_tokens:,} out"
    cost = f", ${result.cost_usd:.4f}" if result.cost_usd is not None and result.cost_usd else ""
    presenter = f", presented by {result.presenter}" if result.presenter else ""
    lines.append(("class:summary.detail", f"  tokens: {tokens}{cost}{presenter}\n"))
    written = writes_footer(result)
    if written is not None:
        lines.append(("class:summary.detail", neutralise(written).rstrip("\n") + "\n"))
    if result.final_answer is None:
        lines.append(("class:warning", "  the run produced no answer\n"))
    return lines


def agent_line(agent: AgentView) -> str:
    """What one agent is doing, in a few words."""
    status = agent.status
    if agent.excluded is not None or status is AgentStatus.EXCLUDED:
        return f"failed: {' '.join((agent.excluded or 'excluded').split())}"
    if agent.tool is not None:
        return f"running {agent.tool}"
    if status is AgentStatus.WORKING and agent.failing is not None:
        tries = "try" if agent.failed_tries == 1 else "tries"
        return (
            f"retrying after {agent.failed_tries} failed {tries}: {' '.join(agent.failing.split())}"
        )
    if status is AgentStatus.WORKING and (phase := agent.paor_status()) is not None:
        return phase
    if status is AgentStatus.WORKING:
        return f"thinking (round {agent.round})" if agent.round > 1 else "thinking"
    if status is AgentStatus.RESTARTING:
        return "restarting"
    if status is AgentStatus.VOTED and agent.vote:
        return f"voted for {agent.vote}"
    if status in (AgentStatus.ANSWERED, AgentStatus.ANSWERED_NO_VOTING) and agent.answer:
        return f"answered {agent.answer}"
    if status is AgentStatus.STOPPED:  # the vote is over: what it did last
        if agent.vote:
            return f"voted for {agent.vote}"
        return f"answered {agent.answer}" if agent.answer else "stopped"
    if status is AgentStatus.PRESENTING:
        return "presenting the final answer"
    if status is AgentStatus.PRESENTED:
        return "presented the final answer"
    return status.value


def _one_line(text: str, limit: int) -> str:
    """``text`` on one line, neutralised, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(neutralise(text).split())
    return flat if len(flat) <= limit else flat[: max(0, limit - 1)] + "…"


def _one_line_middle(text: str, limit: int) -> str:
    """``text`` on one line, neutralised; past ``limit`` characters its middle gives way to
    an ellipsis: a call's arguments end in what tells calls apart (the file of a long path,
    the tail of a command)."""
    flat = " ".join(neutralise(text).split())
    if len(flat) <= limit:
        return flat
    head = max(0, (limit - 1) // 2)
    return flat[:head] + "…" + flat[len(flat) - (limit - 1 - head) :]


def tool_started_line(event: ToolCallStarted) -> StyleAndTextTuples:
    """A tool call as it starts: who calls what, with which arguments."""
    arguments = _one_line_middle(event.arguments, TOOL_PREVIEW)
    return [("class:tool", f"⏺ {event.agent} {event.tool}({arguments})\n")]


def tool_finished_line(event: ToolCallFinished) -> StyleAndTextTuples:
    """A tool call as it ends: whether it worked, how long it took, and the head of what
    it returned (or why it failed)."""
    took = f"{event.duration:.2f}s"
    if event.ok:
        preview = _one_line(event.output[: TOOL_PREVIEW * 4], TOOL_PREVIEW)
        text = f"  ⎿ {event.agent} {event.tool}: ok in {took}" + (
            f" · {preview}" if preview else ""
        )
        return [("class:tool.ok", text + "\n")]
    why = _one_line(event.error or "failed", TOOL_PREVIEW)
    return [("class:tool.failed", f"  ⎿ {event.agent} {event.tool}: failed in {took} · {why}\n")]


@attrs.frozen(kw_only=True)
class ProgressSummary:
    """What the progress block shows of a run: a few numbers, the agents that get a row, and
    counts for the rest. Computed on the runtime's thread with each snapshot, so a frame on
    the UI's thread formats a few lines whatever the number of agents."""

    calls: int
    tokens: int
    answers: int
    rows: tuple[AgentView, ...]
    """The first :data:`MAX_PROGRESS_ROWS` agents."""
    rest: int
    """Agents without a row."""
    rest_doing: tuple[tuple[str, int], ...]
    """What the rest do (the first word of :func:`agent_line`), the four commonest."""


def summarise(view: RunView) -> ProgressSummary:
    agents = list(view.agents.values())
    rest = agents[MAX_PROGRESS_ROWS:]
    counts = Counter(agent_line(a).split(" ")[0] for a in rest)
    return ProgressSummary(
        calls=sum(a.llm_calls for a in agents),
        tokens=sum(a.input_tokens + a.output_tokens for a in agents),
        answers=len(view.answers),
        rows=tuple(agents[:MAX_PROGRESS_ROWS]),
        rest=len(rest),
        rest_doing=tuple(counts.most_common(4)),
    )


def progress_lines(
    view: RunView,
    *,
    status: str,
    elapsed: float,
    width: int = 80,
    streams: Mapping[str, str] | None = None,
    streaming: str | None = None,
) -> StyleAndTextTuples:
    """:func:`progress_block` of ``view`` (summarised here)."""
    return progress_block(
        summarise(view),
        status=status,
        elapsed=elapsed,
        width=width,
        streams=streams,
        streaming=streaming,
    )


def progress_block(
    summary: ProgressSummary,
    *,
    status: str,
    elapsed: float,
    width: int = 80,
    streams: Mapping[str, str] | None = None,
    streaming: str | None = None,
) -> StyleAndTextTuples:
    """The live block: a headline (what runs, for how long, calls and tokens), then one line
    per agent up to :data:`MAX_PROGRESS_ROWS` (with the last words its reply has streamed),
    then counts for the rest, then the last :data:`STREAM_LINES` lines of the text that
    ``streaming`` (the agent whose text came last) is writing."""
    streams = streams or {}
    head = (
        f"{status or 'Running'} · {elapsed:.1f}s · {plural(summary.calls, 'LLM call')} · "
        f"{summary.tokens:,} tokens · {plural(summary.answers, 'answer')}"
    )
    lines: StyleAndTextTuples = [("class:progress.head", head + "\n")]
    name_width = min(24, max((len(a.agent) for a in summary.rows), default=0))
    room = max(10, width - 1)
    for agent in summary.rows:
        doing = neutralise(agent_line(agent))
        text = f"  {agent.agent:<{name_width}}  {doing}"
        style = "class:progress.failed" if agent.excluded else "class:progress.agent"
        streamed = _one_line(streams.get(agent.agent, "")[-room:], room)
        left = room - len(text) - 3  # the rest of the row shows the last words streamed
        if streamed and left >= 10:
            lines.append((style, text))
            lines.append(("class:progress.stream", f" · {streamed[-left:]}\n"))
        else:
            lines.append((style, text[:room] + "\n"))
    if summary.rest:
        what = ", ".join(f"{n:,} {doing}" for doing, n in summary.rest_doing)
        lines.append(("class:progress.agent", f"  … and {summary.rest:,} more: {what}\n"))
    text = streams.get(streaming or "", "")
    if text.strip():
        lines.append(("class:progress.head", f"  {streaming} writes:\n"))
        shown = [line for line in neutralise(text).splitlines() if line.strip()]
        for line in shown[-STREAM_LINES:]:
            lines.append(("class:progress.stream", f"    {line}"[:room] + "\n"))
    return lines
