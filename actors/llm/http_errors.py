"""What the HTTP backends share in classifying a failure: the cause chain, an unreachable
endpoint, a context overflow in words, and the one line an error becomes.

The SDKs use the ``httpx2`` fork, whose exceptions no ``httpx`` class catches, and wrap them
differently (OpenAI in ``APIConnectionError`` with the ``httpx2`` error as the cause;
Anthropic mid-stream not at all). So a backend classifies by its SDK's exception types first,
then by what the cause chain holds (a refused connection, a failed DNS lookup), then by the
error body, and never by the status alone.
"""

from __future__ import annotations

import json
import re
import socket
import ssl
from collections.abc import Iterator
from typing import Any

import attrs
import httpx2

from conclave.actors.llm.errors import (
    ContextOverflow,
    FatalLLMError,
    LLMError,
    TransientLLMError,
)
from conclave.actors.llm.redaction import redact
from conclave.config.schema.endpoint import Timeouts
from conclave.config.secret import Secret

__all__ = [
    "Diagnosis",
    "causes",
    "connection_diagnosis",
    "error_message",
    "failure",
    "looks_like_context_overflow",
    "malformed_event",
    "status_diagnosis",
    "unexpected_event",
    "unreachable",
]

_MAX_CAUSE_CHARS = 400

_OVERFLOW = re.compile(
    r"context[_ ]length|context window|maximum context|prompt is too long|input is too long"
    r"|too many (input )?tokens|reduce the length of the (messages|prompt)"
    r"|exceeds? the (model's )?(maximum )?context",
    re.IGNORECASE,
)


def causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, then everything behind it: causes, contexts, and the members of exception
    groups (a failed connect reports each address it tried in a group), each once."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, BaseExceptionGroup):
            stack.extend(reversed(current.exceptions))
        for nxt in (current.__context__, current.__cause__):
            if nxt is not None:
                stack.append(nxt)


def unreachable(exc: BaseException) -> str | None:
    """Why the endpoint cannot be reached at all, if that is what ``exc`` says: no retry
    will help a refused connection, an unknown host name or a certificate that fails."""
    for cause in causes(exc):
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused (is the server running, and is base_url right?)"
        if isinstance(cause, socket.gaierror):
            reason = cause.strerror or str(cause)
            return f"the host name could not be resolved ({reason}); check base_url"
        if isinstance(cause, ssl.SSLCertVerificationError):
            return f"its TLS certificate failed verification ({cause.verify_message})"
    return None


def looks_like_context_overflow(text: str) -> bool:
    return bool(_OVERFLOW.search(text))


def error_message(body: Any, fallback: str) -> str:
    """The provider's own words from an error body (``{"error": {"message": ...}}``,
    ``{"message": ...}`` or text), else ``fallback``."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
        if isinstance(body.get("message"), str):
            return str(body["message"])
    if isinstance(body, str) and body.strip():
        return body.strip()
    return fallback


@attrs.frozen
class Diagnosis:
    """What a failure means for the caller (the error class) and the words for it."""

    kind: type[LLMError]
    cause: str
    retry: bool = attrs.field(default=False, kw_only=True)
    """Whether the request may be sent again at once (``max_retries``): it failed quickly,
    before its reply began, in a way another attempt can mend (a 429, a 5xx, a connection
    lost). A timeout is not: it has already cost its time, and it becomes a failed try."""
    status: int | None = attrs.field(default=None, kw_only=True)
    retry_after: float | None = attrs.field(default=None, kw_only=True)
    """Seconds the server asked to be left alone for (``Retry-After``)."""


_FATAL_TYPES = {"billing_error", "insufficient_quota"}


_TRANSIENT_TYPES = {"api_error", "server_error", "timeout_error"}


def status_diagnosis(
    status: int, error_type: str | None, message: str, *, key_hint: str, model: str
) -> Diagnosis:
    """A failed HTTP status with the body's error type (or code) and message: the type
    decides where it is known (Anthropic reports an overload mid-stream as status 200;
    OpenAI reports an exhausted quota as 429), the status otherwise."""
    said = f"{status}{f' {error_type}' if error_type else ''}: {message}"
    if status == 413 or error_type == "request_too_large" or looks_like_context_overflow(message):
        return Diagnosis(ContextOverflow, f"the prompt does not fit the model's context ({said})")
    if status == 401 or error_type in ("authentication_error", "invalid_api_key"):
        return Diagnosis(FatalLLMError, f"the API key was refused ({said}); check {key_hint}")
    if status == 403 or error_type == "permission_error":
        return Diagnosis(
            FatalLLMError, f"access denied ({said}); check that {key_hint} may use {model!r}"
        )
    if status == 404 or error_type in ("not_found_error", "model_not_found"):
        return Diagnosis(
            FatalLLMError, f"not found ({said}); check the model name {model!r} and base_url"
        )
    if status == 402 or error_type in _FATAL_TYPES:
        return Diagnosis(FatalLLMError, f"the account cannot pay for calls ({said})")
    if status == 429 or error_type == "rate_limit_error":
        return Diagnosis(TransientLLMError, f"rate-limited, after the retries ({said})")
    if status == 529 or error_type == "overloaded_error":
        return Diagnosis(TransientLLMError, f"the server is overloaded ({said})")
    if status >= 500 or status in (408, 409) or error_type in _TRANSIENT_TYPES:
        return Diagnosis(TransientLLMError, f"the server failed ({said})")
    if status in (400, 422) or error_type == "invalid_request_error":
        return Diagnosis(
            FatalLLMError, f"the server refused the request ({said}); check the backend settings"
        )
    return Diagnosis(TransientLLMError, f"the server failed ({said})")


def connection_diagnosis(exc: BaseException, *, started: bool, timeouts: Timeouts) -> Diagnosis:
    """A transport failure: an unreachable endpoint before the first byte is fatal; a
    timeout or a lost connection is a failed try, and a connection lost before the reply
    began may be retried at once."""
    reason = unreachable(exc)
    if reason is not None and not started:
        return Diagnosis(FatalLLMError, f"cannot connect: {reason}")
    chain = list(causes(exc))
    if any(isinstance(c, httpx2.ConnectTimeout) for c in chain):
        return Diagnosis(
            TransientLLMError, f"could not connect within {timeouts.connect:g}s (timeouts.connect)"
        )
    if any(isinstance(c, httpx2.WriteTimeout) for c in chain):
        return Diagnosis(
            TransientLLMError,
            f"the server did not take the request within {timeouts.first_byte:g}s "
            "(timeouts.first_byte)",
        )
    lost = next((c for c in chain if c is not exc and str(c)), exc)
    where = "mid-stream" if started else "before the reply began"
    return Diagnosis(
        TransientLLMError,
        f"the connection was lost {where} ({type(lost).__name__}: {lost})",
        retry=not started,
    )


_QUOTED_BEFORE = 60
_QUOTED_AFTER = 30


def malformed_event(exc: json.JSONDecodeError) -> Diagnosis:
    """An event whose data is not JSON: what the parser found wrong, where, and the text
    around that place (the head of a long event is cut, never the place itself)."""
    doc, pos = exc.doc, exc.pos
    start, end = max(0, pos - _QUOTED_BEFORE), min(len(doc), pos + _QUOTED_AFTER)
    quoted = ("…" if start else "") + doc[start:end] + ("…" if end < len(doc) else "")
    return Diagnosis(
        TransientLLMError,
        f"the server sent an event whose data is not JSON ({exc.msg} at character {pos} "
        f"of {len(doc)}), near: {quoted}",
    )


def unexpected_event(item: object, exc: Exception, *, protocol: str) -> Diagnosis:
    """An event that is JSON but not of the shape ``protocol`` has: what it held and what
    reading it failed on."""
    shown = repr(item)
    if len(shown) > _QUOTED_BEFORE + _QUOTED_AFTER:
        shown = shown[: _QUOTED_BEFORE + _QUOTED_AFTER - 1] + "…"
    return Diagnosis(
        TransientLLMError,
        f"the server sent an event that is not {protocol}'s ({type(exc).__name__}: {exc}): {shown}",
    )


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_CAUSE_CHARS else text[: _MAX_CAUSE_CHARS - 1] + "…"


def failure(
    kind: type[LLMError],
    *,
    agent: str,
    host: str,
    cause: str,
    key: Secret | None,
    retry_after: float | None = None,
) -> LLMError:
    """The error a backend raises: one line naming the agent, the endpoint host and the
    cause, with every key redacted (``key``, every key in use, anything key-shaped)."""
    extra = (key,) if key is not None else ()
    line = redact(_one_line(f"agent {agent!r} on {host}: {cause}"), extra)
    return kind(line, retry_after=retry_after)
