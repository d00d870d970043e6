"""One readable line per event, and a table of the agents: shared by live progress (stderr)
and ``conclave replay``.

Every line is neutralised before it is returned: task, answer, vote and error text come from
users, models and log files, and a control character in them (ESC starts the terminal's
escape sequences: clear the screen, rewrite lines, set the title, even report back) must
not drive the reader's terminal. C0 and C1 controls and DEL are shown escaped, ``\\x1b``;
newline and tab are kept.
"""

from __future__ import annotations

from conclave.actors.agent.events import (
    AgentStatusChanged,
    LlmRequestFinished,
    LlmRequestStarted,
    RoundRestarted,
    RoundStarted,
)
from conclave.actors.coordination.events import (
    AgentExcluded,
    AnswerAdded,
    AnswerRepeated,
    FinalAnswerProduced,
    PresentationFailed,
    RunStarted,
    VoteAdded,
    VotesCleared,
    VotingComplete,
)
from conclave.actors.events.loop import LlmRetry, LlmTryFailed, ToolCallFinished, ToolCallStarted
from conclave.actors.events.view import AgentView, RunView
from conclave.actors.human.events import AssumptionRecorded, QuestionAnswered, QuestionAsked
from conclave.actors.human.questions import ReplySource
from conclave.actors.llm.protocol import StopReason
from conclave.actors.mcp.events import McpServerFailed, McpServerReady
from conclave.actors.paor.events import (
    CorrectionApplied,
    CorrectionUnused,
    PaorFinished,
    PaorStateChanged,
)
from conclave.actors.paor.subagent_events import SubAgentFinished, SubAgentStarted, agent_of
from conclave.actors.planning.plan import parse_plan
from conclave.actors.run.events import RunEnded, SandboxOpened
from conclave.actors.workspace.events import (
    ContextPathsChanged,
    FinalWorkspaceSaved,
    PresentingForWrites,
    SnapshotPublished,
)
from conclave.actors.workspace.writes import Writes
from conclave.config.schema.endpoint import CHARS_PER_TOKEN_ESTIMATE
from conclave.config.wording import plural
from conclave.runtime import (
    ChildExited,
    ChildStopped,
    DeadLetter,
    DeadLetterCause,
    Event,
    Held,
    HowStopped,
    Released,
    TapFailed,
)

__all__ = ["agent_table", "describe", "neutralise", "usage_unknown"]

_ESCAPED = {
    code: f"\\x{code:02x}"
    for code in (*range(0x00, 0x20), *range(0x7F, 0xA0))
    if chr(code) not in "\n\t"
}


def neutralise(text: str) -> str:
    """``text`` with every C0/C1 control character but newline and tab shown as ``\\xNN``."""
    return text.translate(_ESCAPED)


def _first_line(text: str, width: int = 90) -> str:
    """The answer's first line; for a plan (plan mode), its goal, not its opening tag."""
    plan = parse_plan(text) if "{" in text else None
    if plan is not None:
        text = f"plan: {plan.goal} ({len(plan.steps)} steps)"
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def _one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines in an error's message) one space."""
    return " ".join(text.split())


_NAMED_AGENTS = 5
"""A run of 50,000 agents would otherwise start with a 650 KB line."""


def describe(event: Event, *, verbose: bool = False) -> str | None:
    """A line for ``event``, neutralised, or ``None`` if it is detail only ``verbose`` shows."""
    line = _describe(event, verbose=verbose)
    return None if line is None else neutralise(line)


def _describe(event: Event, *, verbose: bool) -> str | None:
    if isinstance(event, RunStarted):
        shown, more = event.agents[:_NAMED_AGENTS], len(event.agents) - _NAMED_AGENTS
        names = ", ".join(shown) + (f" and {more:,} more" if more > 0 else "")
        agents = "1 agent" if len(event.agents) == 1 else f"{len(event.agents):,} agents"
        return f"run started: {agents} ({names}), strategy {event.strategy.value}"
    if isinstance(event, AnswerAdded):
        return f"{event.agent} answered {event.label}: {_first_line(event.content)}"
    if isinstance(event, VoteAdded):
        return f"{event.voter} voted for {event.label}: {_first_line(event.reason, 60)}"
    if isinstance(event, AnswerRepeated):
        return f"{event.agent} gave the same answer as {event.label}; it votes next"
    if isinstance(event, VotesCleared):
        return _votes_cleared(event)
    if isinstance(event, AgentExcluded):
        withdrawn = (
            f" (its vote for {event.withdrawn_vote} withdrawn)" if event.withdrawn_vote else ""
        )
        return f"{event.agent} excluded: {event.reason}{withdrawn}"
    if isinstance(event, VotingComplete):
        tally = ", ".join(f"{label}={n}" for label, n in sorted(event.tally.items()))
        return (
            f"voting complete: winner {event.winner} ({event.label}); tally {tally or 'no votes'}"
        )
    if isinstance(event, PresentationFailed):
        after = "asked again" if event.retrying else "the chosen answer stands verbatim"
        return _one_line(f"{event.presenter}'s presentation failed ({after}): {event.error}")
    if isinstance(event, FinalAnswerProduced):
        who = event.presenter or "nobody"
        return f"final answer by {who} ({event.strategy.value}): {_first_line(event.content)}"
    if isinstance(event, QuestionAsked):
        return _one_line(f"{event.agent} asks ({event.severity.value}): {event.question}")
    if isinstance(event, QuestionAnswered):
        who = "the default" if event.source is ReplySource.DEFAULT else "the user"
        return _one_line(f"{event.agent}'s question answered by {who}: {event.answer}")
    if isinstance(event, AssumptionRecorded):
        return _one_line(f"{event.agent} assumed: {event.question} -> {event.assumption}")
    if isinstance(event, PaorStateChanged):
        return (
            f"{event.agent} paor iteration {event.iteration}: "
            f"{event.source.value} -> {event.target.value}"
        )
    if isinstance(event, CorrectionApplied):
        return _one_line(
            f"{event.agent} paor iteration {event.iteration}: correction applied at step "
            f"{event.step}: {event.correction}"
        )
    if isinstance(event, CorrectionUnused):
        return _one_line(
            f"{event.agent}: correction not used, it came after the agent's last PAOR round: "
            f"{event.correction}"
        )
    if isinstance(event, PaorFinished):
        return _paor_finished(event, verbose=verbose)
    if isinstance(event, SubAgentStarted | SubAgentFinished):
        return _subagent(event)
    if isinstance(event, RunEnded):
        return f"run ended: {event.termination}" + (
            f", winner {event.winner}" if event.winner else ""
        )
    if isinstance(event, DeadLetter):
        # Drops by mode rules and mail left at shutdown are routine; a crash is not.
        if not verbose and event.cause is not DeadLetterCause.CRASHED:
            return None
        payload = type(event.envelope.payload).__name__
        to = event.envelope.recipient
        return f"dead letter ({event.cause.value}) {payload} to {to}: {event.reason}"
    if isinstance(event, ChildExited) and event.error is not None:
        return f"{event.child} crashed ({event.error}); supervisor {event.action}s it"
    if isinstance(event, ChildStopped) and event.how is HowStopped.CRASHED:
        return _one_line(
            f"{event.child} crashed while {event.supervisor} stopped it ({event.error})"
        )
    if isinstance(event, PresentingForWrites):
        return f"{event.presenter} presents to write the context paths: {event.reason}"
    if isinstance(event, TapFailed):
        # The run went on, but the tap hears nothing more: its log or view stops here.
        return _one_line(f"event tap {event.tap} removed: it raised {event.error}")
    if isinstance(event, McpServerReady):
        tools = "1 tool" if len(event.tools) == 1 else f"{len(event.tools):,} tools"
        again = f" (restarted, incarnation {event.incarnation})" if event.incarnation > 1 else ""
        return f"mcp server {event.server} ready: {tools}{again}"
    if isinstance(event, McpServerFailed):
        return _one_line(f"mcp server {event.server} failed: {event.reason}")
    if isinstance(event, LlmRetry):
        why = f": {event.error}" if event.error else ""
        status = f" ({event.status})" if event.status is not None else ""
        return _one_line(
            f"{event.agent}'s request failed{status}, retry {event.attempt} in "
            f"{event.delay:.1f}s{why}"
        )
    if isinstance(event, LlmTryFailed):
        after = "no tries left" if event.wait is None else f"next try in {event.wait:.1f}s"
        return _one_line(
            f"{event.agent} try {event.failed} of {event.tries} failed ({after}): {event.error}"
        )
    if isinstance(event, SandboxOpened):
        return _sandbox_opened(event, verbose=verbose)
    if isinstance(event, ToolCallStarted):
        return _tool_started(event, verbose=verbose)
    if isinstance(event, ToolCallFinished):
        return _tool_finished(event, verbose=verbose)
    if not verbose:
        return None
    if isinstance(event, AgentStatusChanged):
        return f"{event.agent} is {event.status}" + (f" ({event.detail})" if event.detail else "")
    if isinstance(event, RoundStarted):
        return f"{event.agent} round {event.round} offers {', '.join(event.tools)}"
    if isinstance(event, RoundRestarted):
        return f"{event.agent} restarts round {event.round} ({event.policy.value})"
    if isinstance(event, LlmRequestStarted):
        return f"{event.agent} → LLM ({event.purpose})"
    if isinstance(event, LlmRequestFinished):
        return _llm_finished(event)
    if isinstance(event, SnapshotPublished):
        return f"{event.agent}'s workspace for {event.label} published at {event.path}"
    if isinstance(event, ContextPathsChanged):
        tally = Writes(files=event.files).tally() or "nothing"
        listed = f" (listed in {event.list_file})" if event.list_file else ""
        return f"context paths changed: {tally}{listed}"
    if isinstance(event, FinalWorkspaceSaved):
        return f"{event.agent}'s workspace saved with the final answer at {event.path}"
    if isinstance(event, Held):
        payload = type(event.envelope.payload).__name__
        return f"held {payload} to {event.envelope.recipient}: {event.reason}"
    if isinstance(event, Released):
        return f"released {type(event.envelope.payload).__name__} to {event.envelope.recipient}"
    return None


_TOOL_DETAIL = 100
"""Characters of a call's arguments or error a line shows without ``--verbose``."""
_REFUSAL_DETAIL = 400
"""Characters of a refusal's reason a line shows: the reason is what a reader wants."""


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _tool_started(event: ToolCallStarted, *, verbose: bool) -> str:
    arguments = _one_line(event.arguments)
    shown = arguments if verbose else _cut(arguments, _TOOL_DETAIL)
    return f"{event.agent} [tool:{event.tool}] running… {shown}".rstrip()


def _tool_finished(event: ToolCallFinished, *, verbose: bool) -> str:
    """``done (8 lines, 0.12s)``, ``failed (0.01s): why`` or ``refused: why``; with
    ``verbose``, what the tool returned (or the whole of a failure's error) follows in
    full, indented."""
    head = f"{event.agent} [tool:{event.tool}]"
    took = f"{event.duration:.2f}s"
    if event.ok:
        lines = len(event.output.splitlines())
        line = f"{head} done ({lines} line{'s' * (lines != 1)}, {took})"
        body = event.output
    else:
        why = event.error or event.output
        if event.refused:
            # Why it was refused is the point of the line: said whole, if not too long.
            line = f"{head} refused: {_cut(_one_line(why), _REFUSAL_DETAIL)}"
            body = ""
        else:
            shown = _one_line(why.partition("\n")[0] if verbose else why)
            line = f"{head} failed ({took}): {shown if verbose else _cut(shown, _TOOL_DETAIL)}"
            # The rest of a failure's error, a command's output, in full with ``verbose``.
            body = why.partition("\n")[2]
    if not verbose or not body.strip():
        return line
    return line + "".join(f"\n    | {text}" for text in body.splitlines())


def _subagent(event: SubAgentStarted | SubAgentFinished) -> str:
    """A PAOR agent's sub-agent starting on its step (with its share of the budget), or its
    report reaching the agent (how it ended, what it used, its summary's first line)."""
    who = f"{event.agent} sub-agent {event.subagent} ({event.agent_kind.value})"
    if isinstance(event, SubAgentStarted):
        shares = [f"{event.tokens} tokens"] if event.tokens is not None else []
        shares += [f"{event.seconds:.1f}s"] if event.seconds is not None else []
        share = f" (share: {', '.join(shares)})" if shares else ""
        return _one_line(f"{who} started on step {event.step}{share}: {event.task}")
    end = event.end.value if event.end is not None else "lost after crashing"
    restarts = f", restarted {event.crashes}x" if event.crashes else ""
    used = f"{event.tokens} tokens, {event.seconds:.1f}s{restarts}"
    return f"{who} {end} ({used}): {_first_line(event.summary)}"


def _paor_finished(event: PaorFinished, *, verbose: bool) -> str:
    """The round's end and its summary's first line; with ``verbose``, the whole summary and
    every plan, observation and reflection, indented."""
    summary = event.summary.splitlines()[0] if event.summary else ""
    after = plural(event.iterations, "iteration")
    line = f"{event.agent} paor {event.end.value} after {after}: {summary}"
    if not verbose:
        return line
    body = [*event.summary.splitlines()[1:], *event.detail.splitlines()]
    return line + "".join(f"\n    | {text}" for text in body)


def usage_unknown(event: Event, view: RunView) -> str | None:
    """A line when ``event`` is the first call of its agent whose server reported no usage
    (``view`` has applied it): from then on its tokens and cost are unknown, and
    ``--max-cost`` counts its calls at an estimate. ``None`` for any other event."""
    if type(event) is not LlmRequestFinished or event.usage_reported:
        return None
    agent = view.agents.get(agent_of(event.agent))  # a sub-agent's calls are its agent's
    if agent is None or agent.calls_without_usage != 1:
        return None
    return neutralise(
        f"{agent.agent}'s server reports no usage: its tokens and cost are unknown "
        f"(--max-cost counts its calls at an estimate, a token per {CHARS_PER_TOKEN_ESTIMATE} "
        "characters)"
    )


def _votes_cleared(event: VotesCleared) -> str:
    if event.voters is None:  # a log written before voters were named
        return f"{event.by_label} cleared {event.cleared} vote(s)"
    shown, more = event.voters[:_NAMED_AGENTS], len(event.voters) - _NAMED_AGENTS
    names = ", ".join(shown) + (f" and {more:,} more" if more > 0 else "")
    votes = "1 vote" if len(event.voters) == 1 else f"{len(event.voters):,} votes"
    return f"{event.by_label} cleared {votes} ({names})"


def _sandbox_opened(event: SandboxOpened, *, verbose: bool) -> str | None:
    """Said at start when a person should know it (commands unconfined, orphans removed);
    otherwise a detail."""
    notes = [event.warning] if event.warning else []
    removed = len(event.orphans_removed)
    if removed:
        shown = ", ".join(event.orphans_removed[:3]) + (f" and {removed - 3} more" * (removed > 3))
        noun = "container" if removed == 1 else "containers"
        notes.append(f"removed {removed} orphan {noun} of killed runs ({shown})")
    if not notes and not verbose:
        return None
    how = "confined" if event.confined else "UNCONFINED"
    network = "network on" if event.network else "no network"
    line = f"sandbox {event.sandbox} ({how}, {network})"
    return _one_line(f"{line}: {'; '.join(notes)}" if notes else line)


def _llm_finished(event: LlmRequestFinished) -> str:
    line = f"{event.agent} ← LLM ({event.purpose}): {event.outcome}"
    if event.error:
        return _one_line(f"{line}: {event.error}")
    details = [f"{event.input_tokens:,} in / {event.output_tokens:,} out tokens"]
    if event.cache_read_tokens:
        details.append(f"{event.cache_read_tokens:,} cached")
    if event.stop_reason is StopReason.MAX_TOKENS:
        details.append("cut at the output limit")
    if event.model:
        details.append(f"model {event.model}")
    return f"{line}, {', '.join(details)}"


def agent_table(view: RunView) -> list[str]:
    """The agents of ``view`` as a table: a header, then one row per agent in the run's
    order (status, LLM calls, tokens, latest answer, vote, and the model when a backend
    named one), columns aligned, every cell neutralised. Empty when the view has no agent."""
    agents = list(view.agents.values())
    if not agents:
        return []
    header = ["agent", "status", "LLM calls", "tokens in", "tokens out", "answer", "vote"]
    with_model = any(agent.model for agent in agents)
    if with_model:
        header.append("model")
    rows = [header, *(_table_row(agent, with_model=with_model) for agent in agents)]
    numeric = {2, 3, 4}
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return [
        neutralise(
            "  ".join(
                cell.rjust(widths[i]) if i in numeric else cell.ljust(widths[i])
                for i, cell in enumerate(row)
            ).rstrip()
        )
        for row in rows
    ]


def _table_row(agent: AgentView, *, with_model: bool) -> list[str]:
    row = [
        _one_line(agent.agent),
        _one_line(agent.status),
        f"{agent.llm_calls:,}",
        f"{agent.input_tokens:,}",
        f"{agent.output_tokens:,}",
        agent.answer or "-",
        agent.vote or "-",
    ]
    if with_model:
        row.append(agent.model or "-")
    return row
