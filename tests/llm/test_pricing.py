"""What calls cost, per agent and in total; unknown where any call had no price; and the
estimate --max-cost counts for a call whose server reported no usage."""

from __future__ import annotations

import pytest

from conclave.actors.llm.pricing import (
    UsageLedger,
    UsageSummary,
    add_usage,
    cost_usd,
    estimated_usage,
)
from conclave.actors.llm.protocol import (
    ChatMessage,
    CompletionRequest,
    ToolCall,
    ToolSchema,
    Usage,
)
from conclave.config.schema.endpoint import Price

PRICE = Price(input_per_mtok=3.0, output_per_mtok=15.0, cached_input_per_mtok=0.3)


def test_cost_prices_fresh_cached_and_output_tokens_apart() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=600_000)
    assert cost_usd(usage, PRICE) == pytest.approx(0.4 * 3.0 + 0.6 * 0.3 + 0.1 * 15.0)


def test_cached_and_written_tokens_cost_the_input_price_when_theirs_is_not_given() -> None:
    price = Price(input_per_mtok=2.0, output_per_mtok=8.0)
    usage = Usage(input_tokens=1_000_000, cache_read_tokens=500_000, cache_write_tokens=250_000)
    assert cost_usd(usage, price) == pytest.approx(2.0)


def test_cache_writes_cost_their_own_price_when_given() -> None:
    price = Price(input_per_mtok=3.0, output_per_mtok=15.0, cache_write_per_mtok=3.75)
    usage = Usage(input_tokens=1_000_000, cache_write_tokens=1_000_000)
    assert cost_usd(usage, price) == pytest.approx(3.75)


def test_usages_add_field_by_field() -> None:
    one = Usage(input_tokens=1, output_tokens=2, cache_read_tokens=3, cache_write_tokens=4)
    two = Usage(input_tokens=10, output_tokens=20, reasoning_tokens=5)
    assert add_usage(one, two) == Usage(
        input_tokens=11,
        output_tokens=22,
        cache_read_tokens=3,
        cache_write_tokens=4,
        reasoning_tokens=5,
    )


def test_the_ledger_sums_per_agent_and_in_total() -> None:
    ledger = UsageLedger()
    ledger.record("alice", Usage(input_tokens=1_000_000), PRICE)
    ledger.record("alice", Usage(output_tokens=1_000_000), PRICE)
    ledger.record("bob", Usage(input_tokens=2_000_000), PRICE)
    assert ledger.per_agent()["alice"] == UsageSummary(
        usage=Usage(input_tokens=1_000_000, output_tokens=1_000_000), cost_usd=18.0, calls=2
    )
    total = ledger.total()
    assert total.usage == Usage(input_tokens=3_000_000, output_tokens=1_000_000)
    assert total.cost_usd == pytest.approx(24.0)
    assert total.calls == 3


def test_a_cost_is_unknown_when_any_call_it_sums_had_no_price() -> None:
    ledger = UsageLedger()
    ledger.record("alice", Usage(input_tokens=1_000_000), PRICE)
    ledger.record("bob", Usage(input_tokens=1_000_000), None)
    assert ledger.per_agent()["alice"].cost_usd == pytest.approx(3.0)
    assert ledger.per_agent()["bob"].cost_usd is None
    assert ledger.total().cost_usd is None


def test_a_budget_is_checked_against_the_priced_calls() -> None:
    ledger = UsageLedger()
    ledger.record("alice", Usage(input_tokens=1_000_000), PRICE)
    ledger.record("bob", Usage(input_tokens=1_000_000), None)
    assert ledger.budget_cost_usd() == pytest.approx(3.0)
    assert ledger.would_exceed(2.5)
    assert not ledger.would_exceed(3.5)


def test_the_estimate_of_a_call_without_usage_is_a_token_per_3_characters() -> None:
    request = CompletionRequest(
        messages=(
            ChatMessage(role="system", content="s" * 300),
            ChatMessage(role="user", content="u" * 301),
        ),
        tools=(ToolSchema(name="vote", description="d" * 20, parameters={"type": "object"}),),
    )
    reply = ChatMessage(
        role="assistant",
        content="r" * 10,
        tool_calls=(ToolCall(id="c", name="new_answer", arguments="a" * 50),),
    )

    usage = estimated_usage(request, reply)

    schema = len("vote") + 20 + len('{"type":"object"}')
    assert usage.input_tokens == -(-(601 + schema) // 3)
    assert usage.output_tokens == -(-(10 + len("new_answer") + 50) // 3)
