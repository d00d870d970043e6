"""The retry policy both retry layers use: exponential back-off with full jitter, a server's
``Retry-After`` as the least wait, and a wait that does not fit the time left refused with
the server's words. Pure: no clock, no socket."""

from __future__ import annotations

import email.utils
import time

import pytest

from conclave.actors.llm.retry import REQUEST_BACKOFF, TRY_BACKOFF, Backoff, retry_after, too_long


def _fixed(value: float) -> Backoff:
    return Backoff(initial=1.0, cap=30.0, draw=lambda: value)


@pytest.mark.parametrize(
    ("attempt", "ceiling"), [(1, 1.0), (2, 2.0), (3, 4.0), (5, 16.0), (6, 30.0)]
)
def test_the_ceiling_doubles_with_each_attempt_up_to_the_cap(attempt: int, ceiling: float) -> None:
    assert _fixed(0.5).ceiling(attempt) == ceiling


def test_a_wait_is_drawn_anywhere_from_zero_to_the_ceiling() -> None:
    assert _fixed(0.0).wait(3) == 0.0
    assert _fixed(0.25).wait(3) == pytest.approx(1.0)
    assert _fixed(0.999).wait(3) == pytest.approx(3.996)


def test_the_default_draw_spreads_the_waits_of_agents_that_failed_together() -> None:
    waits = {TRY_BACKOFF.wait(2) for _ in range(50)}
    assert len(waits) > 40
    assert all(0.0 <= w < 2.0 for w in waits)


def test_a_servers_retry_after_is_the_least_wait() -> None:
    assert _fixed(0.1).wait(1, asked=5.0) == 5.0
    assert _fixed(0.9).wait(6, asked=5.0) == pytest.approx(27.0)


def test_the_request_back_off_starts_at_half_a_second_and_stops_at_eight() -> None:
    assert REQUEST_BACKOFF.ceiling(1) == 0.5
    assert REQUEST_BACKOFF.ceiling(10) == 8.0


def test_a_retry_after_that_fits_the_time_left_is_honoured() -> None:
    assert too_long(30.0, 31.0) is None


def test_a_retry_after_longer_than_the_time_left_says_how_long_the_server_asked() -> None:
    refused = too_long(300.0, 55.2)
    assert refused is not None
    assert "asked to wait 300s" in refused
    assert "Retry-After" in refused
    assert "55s left" in refused


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "300"}, 300.0),
        ({"retry-after": "0.25"}, 0.25),
        ({"retry-after-ms": "150", "retry-after": "9"}, 0.15),
        ({}, None),
        ({"retry-after": "soon"}, None),
    ],
)
def test_the_wait_a_server_asks_for_is_read_from_its_headers(
    headers: dict[str, str], seconds: float | None
) -> None:
    assert retry_after(headers) == (None if seconds is None else pytest.approx(seconds))


def test_a_retry_after_given_as_a_date_is_the_time_until_then() -> None:
    then = email.utils.formatdate(time.time() + 120, usegmt=True)
    asked = retry_after({"retry-after": then})
    assert asked is not None
    assert 118.0 <= asked <= 121.0
