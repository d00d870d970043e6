"""An endpoint's shared limits and the hooks that report retries, in virtual time (no
sockets here: the HTTP tests use real time)."""

from __future__ import annotations

import httpx2
import pytest
import trio

from conclave.actors.llm.http_hooks import EndpointGate, call_scope, event_hooks, retry_delay
from conclave.config.keys import is_local
from tests.llm.helpers import Recorder


async def test_a_back_off_holds_every_request_until_it_ends(
    autojump_clock: trio.abc.Clock,
) -> None:
    gate = EndpointGate()
    gate.back_off(2.0)
    admitted: list[float] = []

    async def send() -> None:
        await gate.admit()
        admitted.append(trio.current_time())

    async with trio.open_nursery() as nursery:
        for _ in range(3):
            nursery.start_soon(send)
        await trio.sleep(1.0)
        assert gate.statistics().waiting == 3
        assert gate.statistics().backoff_remaining == pytest.approx(1.0)
    assert admitted == [pytest.approx(2.0)] * 3


async def test_a_later_back_off_wins_over_an_earlier_shorter_one(
    autojump_clock: trio.abc.Clock,
) -> None:
    gate = EndpointGate()
    gate.back_off(5.0)
    gate.back_off(1.0)
    await gate.admit()
    assert trio.current_time() == pytest.approx(5.0)


async def test_requests_per_minute_lets_a_minutes_worth_through_then_waits(
    autojump_clock: trio.abc.Clock,
) -> None:
    gate = EndpointGate(requests_per_minute=2)
    times = []
    for _ in range(5):
        await gate.admit()
        times.append(trio.current_time())
    assert times == [0.0, 0.0, pytest.approx(60.0), pytest.approx(60.0), pytest.approx(120.0)]


async def test_a_cancelled_wait_counts_no_request(autojump_clock: trio.abc.Clock) -> None:
    gate = EndpointGate(requests_per_minute=1)
    await gate.admit()
    with trio.move_on_after(1.0):
        await gate.admit()
    assert gate.statistics().requests_in_window == 1
    assert gate.statistics().waiting == 0


@pytest.mark.parametrize(
    ("headers", "retries_taken", "delay"),
    [
        ({"retry-after": "3"}, 0, 3.0),
        ({"retry-after": "0.25"}, 0, 0.25),
        ({"retry-after-ms": "150", "retry-after": "9"}, 0, 0.15),
        ({}, 0, 0.5),
        ({}, 2, 2.0),
        ({}, 10, 8.0),
        ({"retry-after": "600"}, 1, 1.0),
        ({"retry-after": "soon"}, 0, 0.5),
    ],
)
def test_the_retry_delay_is_the_servers_within_two_minutes_else_exponential(
    headers: dict[str, str], retries_taken: int, delay: float
) -> None:
    assert retry_delay(headers, retries_taken) == pytest.approx(delay)


def _response(
    status: int, retry_count: int = 0, headers: dict[str, str] | None = None
) -> httpx2.Response:
    request = httpx2.Request(
        "POST", "http://127.0.0.1/v1", headers={"x-stainless-retry-count": str(retry_count)}
    )
    return httpx2.Response(status, headers=headers or {}, request=request)


async def test_a_failed_attempt_the_sdk_will_retry_is_reported_once_to_the_calls_sink() -> None:
    hooks = event_hooks(EndpointGate())
    sink = Recorder()
    with call_scope(sink, max_retries=2):
        await hooks["response"][0](_response(503, 0))
        await hooks["request"][0](_response(200, 1).request)
        await hooks["response"][0](_response(200, 1))
    assert sink.events == [("retry", 1, 503, 0.5)]


async def test_the_last_failed_attempt_is_not_reported_as_a_retry() -> None:
    hooks = event_hooks(EndpointGate())
    sink = Recorder()
    with call_scope(sink, max_retries=1):
        await hooks["response"][0](_response(500, 1))
    assert sink.events == []


async def test_a_status_the_sdk_does_not_retry_is_not_reported() -> None:
    hooks = event_hooks(EndpointGate())
    sink = Recorder()
    with call_scope(sink, max_retries=2):
        await hooks["response"][0](_response(401))
        await hooks["response"][0](_response(503, headers={"x-should-retry": "false"}))
    assert sink.events == []


async def test_a_retry_after_a_lost_connection_is_reported_when_it_is_sent() -> None:
    hooks = event_hooks(EndpointGate())
    sink = Recorder()
    with call_scope(sink, max_retries=2):
        await hooks["request"][0](_response(200, 1).request)
    assert sink.events == [("retry", 1, None, 0.0)]


async def test_a_429_backs_off_the_whole_endpoint(autojump_clock: trio.abc.Clock) -> None:
    gate = EndpointGate()
    hooks = event_hooks(gate)
    await hooks["response"][0](_response(429, headers={"retry-after": "4"}))
    await hooks["request"][0](_response(200).request)
    assert trio.current_time() == pytest.approx(4.0)


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://localhost:11434/v1", True),
        ("http://127.0.0.1:8000/v1", True),
        ("http://127.1.2.3/v1", True),
        ("http://[::1]:8000/v1", True),
        ("https://api.openai.com/v1", False),
        ("http://192.168.1.10:8000/v1", False),
    ],
)
def test_a_server_on_this_machine_is_local(url: str, local: bool) -> None:
    assert is_local(url) is local
