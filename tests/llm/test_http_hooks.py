"""An endpoint's shared limits, in virtual time (no sockets here: the HTTP tests use real
time)."""

from __future__ import annotations

import ssl

import pytest
import trio

from conclave.actors.llm.http_hooks import EndpointGate, tls_context
from conclave.config.keys import is_local


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


def test_an_https_endpoint_trusts_the_systems_certificates() -> None:
    context = tls_context("https://api.openai.com/v1")
    assert context.verify_mode is ssl.CERT_REQUIRED
    assert context.check_hostname
    assert context.cert_store_stats()["x509_ca"] > 0


def test_https_endpoints_share_one_trust_store_loaded_once() -> None:
    assert tls_context("https://a.example/v1") is tls_context("https://b.example/v1")


def test_a_plain_http_endpoint_loads_no_trust_store_yet_still_verifies() -> None:
    # A redirect to https from a local server fails its handshake rather than going out
    # unverified.
    context = tls_context("http://localhost:8000/v1")
    assert context.cert_store_stats()["x509_ca"] == 0
    assert context.verify_mode is ssl.CERT_REQUIRED
    assert context.check_hostname
