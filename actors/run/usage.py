"""What a run's LLM calls used and cost, per agent and in total, and its cost budget.

:class:`UsageTap` is an event tap: it feeds a :class:`~actors.llm.pricing.UsageLedger` from
the ``llm_request_finished`` events the agents record (the same events replay reads), with
each agent's price from its backend section. Cached prompt tokens are counted apart, so they
cost the cheaper cached (or cache-write) price. Prices come from the config, never from the
network; a cost is known only when every call it sums had a price (``None`` otherwise), and
tokens only when every call's server reported them (``None`` otherwise, with
``calls_without_usage`` saying how many did not): never a 0 that reads as a count.

With a budget, the tap says once, as soon as the priced calls reach it, that the run must
halt: any further call would exceed it. The run then ends like a timeout, with the best
answer so far (``termination: max_cost``). A priced call whose server reported no usage
counts at the estimate its event carries (see :mod:`actors.llm.pricing`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import attrs

from conclave.actors.agent.events import LlmRequestFinished
from conclave.actors.llm.pricing import UsageLedger, UsageSummary
from conclave.actors.llm.protocol import CallOutcome, Usage
from conclave.actors.paor.subagent_paths import agent_of
from conclave.config.schema import AgentConfig
from conclave.config.schema.agents import price_of
from conclave.config.schema.endpoint import Price
from conclave.runtime import Event

__all__ = ["AgentUsage", "RunUsage", "UsageTap"]

_SHARE_DIGITS = 4
_COST_DIGITS = 9
"""Dollars are rounded to a billionth in results: exact enough for one token of the cheapest
model, and free of float noise such as 0.30000000000000004."""


@attrs.frozen(kw_only=True)
class AgentUsage:
    """Tokens and dollars of some calls (one agent's, or the whole run's)."""

    input_tokens: int | None = 0
    """Prompt tokens, cached ones included; ``None`` (here and in the four below) when some
    call's server reported no usage."""
    output_tokens: int | None = 0
    """Reply tokens, reasoning included."""
    cache_read_tokens: int | None = 0
    cache_write_tokens: int | None = 0
    reasoning_tokens: int | None = 0
    calls: int = 0
    """Calls that returned a reply."""
    calls_without_usage: int = 0
    """Of ``calls``, those whose server reported no usage."""
    cost_usd: float | None = 0.0
    """``None`` when some call had no price, or reported no usage."""
    cached_share: float | None = None
    """Of the prompt tokens, the share read from the provider's cache (0 to 1, rounded to
    a ten-thousandth): how well the prompts kept a shared prefix. ``None`` without prompt
    tokens, or when some call reported no usage."""

    @classmethod
    def of(cls, summary: UsageSummary) -> AgentUsage:
        usage = summary.usage
        cost = summary.cost_usd
        known = not summary.unreported
        share = None
        if known and usage.input_tokens:
            share = round(usage.cache_read_tokens / usage.input_tokens, _SHARE_DIGITS)
        return cls(
            input_tokens=usage.input_tokens if known else None,
            output_tokens=usage.output_tokens if known else None,
            cache_read_tokens=usage.cache_read_tokens if known else None,
            cache_write_tokens=usage.cache_write_tokens if known else None,
            reasoning_tokens=usage.reasoning_tokens if known else None,
            calls=summary.calls,
            calls_without_usage=summary.unreported,
            cost_usd=None if cost is None else round(cost, _COST_DIGITS),
            cached_share=share,
        )


@attrs.frozen(kw_only=True)
class RunUsage:
    total: AgentUsage = AgentUsage()
    agents: dict[str, AgentUsage] = attrs.field(factory=dict)
    """Agent id → its calls' usage; an agent without a finished call is absent."""


class UsageTap:
    """Counts usage and cost as calls finish; see the module docstring."""

    hears_deliveries = False
    """Calls only (:func:`~runtime.eventlog.hears_deliveries`)."""

    def __init__(
        self,
        agents: Iterable[AgentConfig],
        *,
        budget_usd: float | None = None,
    ) -> None:
        self.ledger = UsageLedger()
        self.on_budget_reached: Callable[[], None] | None = None
        """Called once, when the priced calls first reach the budget."""
        self._prices: Mapping[str, Price | None] = {a.id: price_of(a) for a in agents}
        self._budget = budget_usd
        self._reached = False

    def record(self, event: Event) -> None:
        if type(event) is not LlmRequestFinished or event.outcome is not CallOutcome.OK:
            return
        agent = agent_of(event.agent)  # a sub-agent's calls are its agent's, at its price
        if not event.usage_reported:
            estimate = Usage(
                input_tokens=event.estimated_input_tokens,
                output_tokens=event.estimated_output_tokens,
            )
            self.ledger.record(agent, None, self._prices.get(agent), estimate=estimate)
            self._check_budget()
            return
        usage = Usage(
            input_tokens=event.input_tokens,
            output_tokens=event.output_tokens,
            cache_read_tokens=event.cache_read_tokens,
            cache_write_tokens=event.cache_write_tokens,
            reasoning_tokens=event.reasoning_tokens,
        )
        self.ledger.record(agent, usage, self._prices.get(agent))
        self._check_budget()

    def _check_budget(self) -> None:
        budget = self._budget
        if budget is None or self._reached:
            return
        spent = self.ledger.budget_cost_usd()
        if spent >= budget:
            self._reached = True
            if self.on_budget_reached is not None:
                self.on_budget_reached()

    def usage(self) -> RunUsage:
        total = self.ledger.total()
        if not any(price is not None for price in self._prices.values()):
            # No agent has a price: a run that made no call did not cost $0, its cost is
            # unknown as every other unpriced run's is.
            total = attrs.evolve(total, cost_usd=None)
        return RunUsage(
            total=AgentUsage.of(total),
            agents={agent: AgentUsage.of(s) for agent, s in self.ledger.per_agent().items()},
        )
