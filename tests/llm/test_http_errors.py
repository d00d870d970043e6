"""Classifying a failure by type, cause chain and body, and the one line it becomes."""

from __future__ import annotations

import socket

import pytest

from conclave.actors.llm.errors import ContextOverflow, FatalLLMError, LLMError, TransientLLMError
from conclave.actors.llm.http_errors import (
    causes,
    error_message,
    failure,
    looks_like_context_overflow,
    status_diagnosis,
    unreachable,
)
from conclave.config.secret import Secret


def _chained(outer: Exception, inner: BaseException) -> Exception:
    try:
        try:
            raise inner
        except BaseException as exc:
            raise outer from exc
    except Exception as caught:
        return caught


def test_the_cause_chain_reaches_into_exception_groups() -> None:
    refused = ConnectionRefusedError(111, "Connection refused")
    error = _chained(RuntimeError("connect failed"), ExceptionGroup("all attempts", [refused]))
    assert refused in list(causes(error))
    assert unreachable(error) is not None
    assert "connection refused" in (unreachable(error) or "")


def test_a_failed_name_lookup_is_unreachable() -> None:
    error = _chained(RuntimeError("connect"), socket.gaierror(-2, "Name or service not known"))
    assert "could not be resolved (Name or service not known)" in (unreachable(error) or "")


def test_a_reset_connection_is_not_unreachable() -> None:
    assert unreachable(_chained(RuntimeError("read"), ConnectionResetError())) is None


@pytest.mark.parametrize(
    "text",
    [
        "This model's maximum context length is 8192 tokens",
        "prompt is too long: 210000 tokens > 200000 maximum",
        "Input is too long for requested model",
        "The input exceeds the context window of this model",
        "Please reduce the length of the messages.",
    ],
)
def test_context_overflow_is_recognised_in_the_providers_words(text: str) -> None:
    assert looks_like_context_overflow(text)


def test_an_unrelated_error_is_not_a_context_overflow() -> None:
    assert not looks_like_context_overflow("max_tokens must be at most 4096")


@pytest.mark.parametrize(
    ("status", "kind", "expected"),
    [
        (401, None, FatalLLMError),
        (403, None, FatalLLMError),
        (404, None, FatalLLMError),
        (402, None, FatalLLMError),
        (429, "insufficient_quota", FatalLLMError),
        (400, None, FatalLLMError),
        (200, "invalid_request_error", FatalLLMError),
        (429, None, TransientLLMError),
        (500, "invalid_request_error", TransientLLMError),
        (503, None, TransientLLMError),
        (529, None, TransientLLMError),
        (200, "overloaded_error", TransientLLMError),
        (200, "api_error", TransientLLMError),
        (408, None, TransientLLMError),
        (413, None, ContextOverflow),
        (400, "request_too_large", ContextOverflow),
    ],
)
def test_a_status_is_classified_by_its_type_first_then_its_code(
    status: int, kind: str | None, expected: type[LLMError]
) -> None:
    diagnosis = status_diagnosis(status, kind, "it failed", key_hint="api_key", model="m")
    assert diagnosis.kind is expected


def test_the_providers_message_is_found_in_any_common_body_shape() -> None:
    assert error_message({"error": {"message": "a"}}, "-") == "a"
    assert error_message({"message": "b"}, "-") == "b"
    assert error_message({"error": "c"}, "-") == "c"
    assert error_message(" d ", "-") == "d"
    assert error_message(None, "fallback") == "fallback"


def test_a_failure_is_one_short_redacted_line() -> None:
    key = Secret("plainkey-without-prefix-0123")
    error = failure(
        TransientLLMError,
        agent="alice",
        host="example.com",
        cause=f"bad\nkey {key.reveal()} " + "x" * 1000,
        key=key,
    )
    message = str(error)
    assert isinstance(error, TransientLLMError)
    assert message.startswith("agent 'alice' on example.com: bad key [REDACTED] x")
    assert "\n" not in message
    assert len(message) <= 400
