"""A stream's silences (``first_token``, ``stall``) in virtual time: the wait restarts with
every item, and a silence is called no earlier than its limit after the last item and at
most 1 % of it later (the deadline is not moved for every token)."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any, Self

import pytest
import trio

from conclave.actors.llm.errors import TransientLLMError
from conclave.actors.llm.openai_backend import OpenAIBackend
from conclave.actors.llm.protocol import ChatMessage, CompletionRequest
from conclave.actors.llm.sdk_endpoint import SdkStream
from conclave.config.schema.endpoint import Timeouts
from conclave.config.schema.openai import OpenAIBackendConfig
from conclave.config.secret import Secret

REQUEST = CompletionRequest(messages=(ChatMessage(role="user", content="hi"),))
STALL = 1.0
FIRST_TOKEN = 5.0


def _text(content: str) -> dict[str, Any]:
    return {"model": "m", "choices": [{"index": 0, "delta": {"content": content}}]}


FINISH = {"model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}


class _Timed:
    """A stream that yields each item after its delay (``math.inf``: never)."""

    def __init__(self, items: list[tuple[float, dict[str, Any]]]) -> None:
        self._items = items

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        return None

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._items_in_time()

    async def _items_in_time(self) -> AsyncIterator[Any]:
        for delay, item in self._items:
            await trio.sleep(delay)
            yield item


class _Backend(OpenAIBackend):
    def __init__(self, items: list[tuple[float, dict[str, Any]]]) -> None:
        config = OpenAIBackendConfig(
            model="m",
            api_key=Secret("k"),
            max_retries=0,
            timeouts=Timeouts(first_token=FIRST_TOKEN, stall=STALL),
        )
        super().__init__(client=None, config=config, agent_id="a", host="h")  # type: ignore[arg-type]
        self._items = items

    async def _open_stream(self, arguments: dict[str, Any]) -> SdkStream:
        return _Timed(self._items)


async def test_a_stream_whose_items_come_within_the_stall_limit_never_stalls(
    autojump_clock: trio.abc.Clock,
) -> None:
    tokens = [(0.9 * STALL, _text("x")) for _ in range(50)]
    completion = await _Backend([*tokens, (0.9 * STALL, FINISH)]).complete(REQUEST)

    assert completion.message.content == "x" * 50
    assert trio.current_time() == pytest.approx(51 * 0.9 * STALL)


async def test_a_stall_is_called_its_limit_after_the_last_item_at_most_the_slack_later(
    autojump_clock: trio.abc.Clock,
) -> None:
    tokens = [(0.001, _text("x")) for _ in range(30)]
    last = 30 * 0.001

    with pytest.raises(TransientLLMError, match="stalled"):
        await _Backend([*tokens, (math.inf, FINISH)]).complete(REQUEST)

    assert last + STALL <= trio.current_time() <= last + STALL * 1.01 + 1e-9


async def test_the_first_token_may_take_longer_than_a_stall(
    autojump_clock: trio.abc.Clock,
) -> None:
    completion = await _Backend([(0.9 * FIRST_TOKEN, _text("x")), (0.0, FINISH)]).complete(REQUEST)

    assert completion.message.content == "x"


async def test_after_the_first_token_the_shorter_stall_limit_applies_at_once(
    autojump_clock: trio.abc.Clock,
) -> None:
    with pytest.raises(TransientLLMError, match="stalled"):
        await _Backend([(0.1 * FIRST_TOKEN, _text("x")), (math.inf, FINISH)]).complete(REQUEST)

    first = 0.1 * FIRST_TOKEN
    assert first + STALL <= trio.current_time() <= first + STALL * 1.01 + 1e-9
