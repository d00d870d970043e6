"""The running turn as the REPL draws it: folded from the run's events on the runtime's
thread, handed to the UI thread as frozen snapshots.

The runtime runs on a thread of its own (:mod:`ui.repl.app`), so the UI never reads what the
run is changing: :class:`LiveRun` applies each event where it is recorded (cheap: a dict
update), and the service hands the UI a :class:`RunSnapshot` at most once per redraw
interval. A snapshot is copied once and never changed, so the UI may draw from it, cache what
it drew, and let the run move on meanwhile.

Besides the :class:`~actors.events.view.RunView` (a function of the logged events), a
snapshot carries what only live watchers see: each agent's streamed text (``TextDelta`` is
ephemeral, so the view leaves it out), the size of its latest prompt, and the dollars its
priced calls have cost so far.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from conclave.actors.agent.events import LlmRequestFinished, LlmRequestStarted
from conclave.actors.events import DomainEvent
from conclave.actors.events.loop import TextDelta
from conclave.actors.events.view import RunPhase, RunView
from conclave.actors.llm.pricing import cost_usd
from conclave.actors.llm.protocol import Usage
from conclave.actors.paor.subagent_events import agent_of
from conclave.config.schema import ConclaveConfig
from conclave.config.schema.agents import price_of
from conclave.ui.repl.render import ProgressSummary, summarise

__all__ = ["STREAM_TAIL", "LiveRun", "RunSnapshot"]

STREAM_TAIL = 4000
"""Characters of an agent's current reply kept for the screen: its last lines."""


@attrs.frozen(kw_only=True)
class RunSnapshot:
    """The run as of one moment; nothing in it changes afterwards."""

    view: RunView
    """A copy of the run's view."""
    progress: ProgressSummary
    """What the progress block shows of it (summarised on the runtime's thread)."""
    streams: Mapping[str, str] = attrs.field(factory=dict)
    """Agent → the text its current reply has streamed so far (its last
    :data:`STREAM_TAIL` characters); an agent whose reply streamed nothing is absent."""
    streaming: str | None = None
    """The agent whose text arrived last."""
    context_tokens: int = 0
    """The largest prompt-plus-reply of any agent's latest call: the context in use."""
    cost_usd: float | None = 0.0
    """What the run's calls have cost so far; ``None`` once a call had no price (a
    backend without ``price:``) or reported no usage, as a run's result counts it."""
    ended: bool = False
    """Whether ``run_ended`` was applied: the session's totals include the run from then."""


class LiveRun:
    """Folds one run's events (on the runtime's thread); :meth:`snapshot` copies them out."""

    def __init__(self, config: ConclaveConfig) -> None:
        self.view = RunView()
        self._agents = {agent.id: agent for agent in config.agents}
        self._streams: dict[str, str] = {}
        self._streaming: str | None = None
        self._context: dict[str, int] = {}
        self._cost: float | None = 0.0
        self.changed = True
        """Whether anything changed since the last snapshot."""

    def apply(self, event: DomainEvent) -> None:
        self.changed = True
        if isinstance(event, TextDelta):
            text = self._streams.get(event.agent, "") + event.text
            self._streams[event.agent] = text[-STREAM_TAIL:]
            self._streaming = event.agent
            return
        self.view.apply(event)
        if isinstance(event, LlmRequestStarted):
            self._streams.pop(event.agent, None)  # a new reply streams from its start
        elif isinstance(event, LlmRequestFinished):
            self._context[event.agent] = event.input_tokens + event.output_tokens
            self._charge(event)

    def _charge(self, event: LlmRequestFinished) -> None:
        agent = self._agents.get(agent_of(event.agent))  # a sub-agent's calls are its agent's
        if self._cost is None or agent is None:
            return
        price = price_of(agent)
        if price is None or not event.usage_reported:
            self._cost = None
            return
        usage = Usage(
            input_tokens=event.input_tokens,
            output_tokens=event.output_tokens,
            cache_read_tokens=event.cache_read_tokens,
            cache_write_tokens=event.cache_write_tokens,
            reasoning_tokens=event.reasoning_tokens,
        )
        self._cost += cost_usd(usage, price)

    def snapshot(self) -> RunSnapshot:
        """A copy of the run as it is now, and its progress summary: O(agents + answers), on
        the runtime's thread, once per publishing interval."""
        self.changed = False
        view = self.view
        copy = attrs.evolve(
            view,
            agents=dict(view.agents),
            answers=list(view.answers),
            votes=dict(view.votes),
            tally=dict(view.tally),
        )
        return RunSnapshot(
            view=copy,
            progress=summarise(copy),
            streams=dict(self._streams),
            streaming=self._streaming,
            context_tokens=max(self._context.values(), default=0),
            cost_usd=self._cost,
            ended=view.phase is RunPhase.ENDED,
        )
