"""How much one loop may spend: LLM calls, failed tries, time and tokens."""

from __future__ import annotations

import math
from typing import Any

import attrs

from conclave.actors.llm.retry import TRY_BACKOFF, Backoff

__all__ = ["LoopBudget"]


def _positive_or_none(_inst: object, attr: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{attr.name} must be a finite number > 0 or None, got {value!r}")


@attrs.frozen(kw_only=True)
class LoopBudget:
    max_steps: int = attrs.field(default=25, validator=attrs.validators.ge(1))
    """LLM calls per loop; a model that keeps calling tools is stopped here."""
    max_tries: int = attrs.field(default=3, validator=attrs.validators.ge(1))
    """Failed tries per loop: contract violations, backend errors and call timeouts."""
    call_timeout: float | None = attrs.field(default=600.0, validator=_positive_or_none)
    """Seconds one LLM call may take; a call that takes longer is a failed try."""
    round_time_limit: float | None = attrs.field(default=None, validator=_positive_or_none)
    """Wall-clock seconds for the whole loop, tools included."""
    max_tokens: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.ge(1))
    )
    """Input plus output tokens over the loop's LLM calls."""
    max_output_tokens: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.ge(1))
    )
    """Per call; ``None`` leaves it to the backend's configuration."""
    backoff: Backoff = TRY_BACKOFF
    """The wait before the next try after a failed call (not after a reply that broke the
    rules: the model hears why at once)."""
