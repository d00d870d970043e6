"""How a backend call failed, classified by what the caller should do about it.

- ``TransientLLMError`` (and a plain ``LLMError``): overload, a 5xx, a dropped stream.
  A failed try; the loop tries again within its budget.
- ``FatalLLMError``: a bad key, an unknown model, an unreachable endpoint. Retrying cannot
  help; the agent is excluded at once.
- ``ContextOverflow``: the prompt is longer than the model's context. One retry with
  shorter answer previews.
- ``ResponseError``: the reply cannot be used as it is (cut off at the output limit). The
  error goes back to the model, as a failed try.

Messages are redacted by the backend that raises them: no key ever appears in one.
"""

from __future__ import annotations

import enum

__all__ = [
    "ContextOverflow",
    "ErrorClass",
    "FatalLLMError",
    "LLMError",
    "ResponseError",
    "TransientLLMError",
]


class ErrorClass(enum.Enum):
    TRANSIENT = "transient"
    FATAL = "fatal"
    CONTEXT_OVERFLOW = "context_overflow"
    RESPONSE = "response"


class LLMError(Exception):
    """A backend failed to produce a completion. Unless a subclass says otherwise, the
    failure is transient: a failed try."""

    error_class = ErrorClass.TRANSIENT

    def __init__(self, message: str = "", *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        """Seconds the server asked to be left alone for (its ``Retry-After``): the next
        try waits at least this long."""


class TransientLLMError(LLMError):
    """Worth another try: overloaded, rate-limited after retries, a 5xx, a dropped stream."""


class FatalLLMError(LLMError):
    """Retrying cannot help: a bad key, an unknown model, an unreachable endpoint."""

    error_class = ErrorClass.FATAL


class ContextOverflow(LLMError):
    """The request does not fit the model's context window."""

    error_class = ErrorClass.CONTEXT_OVERFLOW


class ResponseError(LLMError):
    """The reply cannot be used as it is (cut off at the output limit, refused)."""

    error_class = ErrorClass.RESPONSE
