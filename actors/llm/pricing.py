"""What calls cost: token usage per agent and in total, and dollars where prices are known.

Prices come from the config (``price:`` of a backend section) and are never fetched from the
network. A cost is known only when every call it sums had a price: an agent without one has
``cost_usd = None``, and so has the total (a partial sum would read as the run's cost). So it
is with tokens: a call whose server reported no usage is counted in ``unreported``, and what
its sums would be is unknown.

``--max-cost`` cannot leave such calls out: a server that reports no usage would make the
budget a budget of nothing. So what the budget counts (:meth:`UsageLedger.budget_cost_usd`)
includes, for each of them, the cost of an estimate of its tokens from the characters sent
and received (:func:`estimated_usage`); results keep saying unknown, never the estimate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import attrs
import orjson

from conclave.actors.llm.protocol import ChatMessage, CompletionRequest, Usage
from conclave.config.schema.endpoint import CHARS_PER_TOKEN_ESTIMATE, Price

__all__ = [
    "UsageLedger",
    "UsageSummary",
    "add_usage",
    "cost_usd",
    "estimated_usage",
]

_PER_MTOK = 1_000_000


def estimated_usage(request: CompletionRequest, reply: ChatMessage) -> Usage:
    """The tokens of a call whose server reported none, from the characters sent (messages,
    tool calls, tool schemas) and received (the reply's text and tool calls), at
    :data:`~config.schema.endpoint.CHARS_PER_TOKEN_ESTIMATE`."""
    sent = sum(_chars(message) for message in request.messages) + sum(
        len(tool.name) + len(tool.description) + len(orjson.dumps(tool.parameters))
        for tool in request.tools
    )
    return Usage(
        input_tokens=math.ceil(sent / CHARS_PER_TOKEN_ESTIMATE),
        output_tokens=math.ceil(_chars(reply) / CHARS_PER_TOKEN_ESTIMATE),
    )


def _chars(message: ChatMessage) -> int:
    return len(message.content) + sum(
        len(call.name) + len(call.arguments) for call in message.tool_calls
    )


def add_usage(a: Usage, b: Usage) -> Usage:
    return Usage(
        input_tokens=a.input_tokens + b.input_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        cache_read_tokens=a.cache_read_tokens + b.cache_read_tokens,
        cache_write_tokens=a.cache_write_tokens + b.cache_write_tokens,
        reasoning_tokens=a.reasoning_tokens + b.reasoning_tokens,
    )


def cost_usd(usage: Usage, price: Price) -> float:
    """Dollars for ``usage``: prompt tokens read from the cache at the cached price, those
    written to it at the cache-write price (each the input price when not given), the rest of
    the prompt at the input price, and the reply (reasoning included) at the output price."""
    cached = usage.cache_read_tokens
    written = usage.cache_write_tokens
    fresh = max(usage.input_tokens - cached - written, 0)
    cached_price = (
        price.input_per_mtok
        if price.cached_input_per_mtok is None
        else (price.cached_input_per_mtok)
    )
    write_price = (
        price.input_per_mtok if price.cache_write_per_mtok is None else (price.cache_write_per_mtok)
    )
    dollars = (
        fresh * price.input_per_mtok
        + cached * cached_price
        + written * write_price
        + usage.output_tokens * price.output_per_mtok
    )
    return dollars / _PER_MTOK


@attrs.frozen(kw_only=True)
class UsageSummary:
    usage: Usage = attrs.field(factory=Usage)
    """Of the calls that reported usage."""
    cost_usd: float | None = 0.0
    """``None`` when some call had no price, or reported no usage."""
    calls: int = 0
    unreported: int = 0
    """Calls whose server reported no usage."""


class UsageLedger:
    """Usage and cost as a run's calls finish. Owned by the run; read at any time."""

    def __init__(self) -> None:
        self._agents: dict[str, UsageSummary] = {}
        self._budget_cost = 0.0
        self.estimated_calls = 0
        """Priced calls that reported no usage, counted against the budget at an estimate."""

    def record(
        self,
        agent_id: str,
        usage: Usage | None,
        price: Price | None,
        *,
        estimate: Usage | None = None,
    ) -> None:
        """One call's ``usage`` (``None``: its server reported none, and ``estimate`` is
        what :func:`estimated_usage` made of it) at ``price``."""
        before = self._agents.get(agent_id, UsageSummary())
        cost = None
        if price is not None and usage is not None:
            dollars = cost_usd(usage, price)
            self._budget_cost += dollars
            if before.cost_usd is not None:
                cost = before.cost_usd + dollars
        elif price is not None and estimate is not None:
            self._budget_cost += cost_usd(estimate, price)
            self.estimated_calls += 1
        self._agents[agent_id] = UsageSummary(
            usage=before.usage if usage is None else add_usage(before.usage, usage),
            cost_usd=cost,
            calls=before.calls + 1,
            unreported=before.unreported + (usage is None),
        )

    def per_agent(self) -> Mapping[str, UsageSummary]:
        return dict(self._agents)

    def total(self) -> UsageSummary:
        usage = Usage()
        cost: float | None = 0.0
        calls = unreported = 0
        for summary in self._agents.values():
            usage = add_usage(usage, summary.usage)
            calls += summary.calls
            unreported += summary.unreported
            cost = None if cost is None or summary.cost_usd is None else cost + summary.cost_usd
        return UsageSummary(usage=usage, cost_usd=cost, calls=calls, unreported=unreported)

    def budget_cost_usd(self) -> float:
        """Dollars of every priced call so far, at an estimate for those that reported no
        usage (what ``--max-cost`` compares)."""
        return self._budget_cost

    def would_exceed(self, budget_usd: float) -> bool:
        """Whether the priced calls so far cost more than ``budget_usd``."""
        return self._budget_cost > budget_usd
