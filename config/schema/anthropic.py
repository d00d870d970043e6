"""The ``anthropic`` backend section: the Messages API."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import attrs

from conclave.config.schema.checks import whole
from conclave.config.schema.endpoint import MAX_OUTPUT_TOKENS, HttpBackendConfig, flag, non_empty

__all__ = ["MIN_THINKING_BUDGET", "AnthropicBackendConfig"]

MIN_THINKING_BUDGET = 1_024
"""The smallest ``budget_tokens`` the API accepts."""


def _thinking(inst: AnthropicBackendConfig, attr: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    whole(MIN_THINKING_BUDGET, MAX_OUTPUT_TOKENS)(inst, attr, value)
    if value >= inst.max_output_tokens:
        raise ValueError(
            f"'thinking_budget' ({value}) must be less than 'max_output_tokens' "
            f"({inst.max_output_tokens}): thinking counts toward the reply's tokens; raise "
            "max_output_tokens or lower the budget"
        )
    if inst.temperature is not None:
        raise ValueError(
            "'temperature' cannot be set with 'thinking_budget' (extended thinking needs the "
            "default temperature); remove one of them"
        )


@attrs.frozen(kw_only=True)
class AnthropicBackendConfig(HttpBackendConfig):
    DEFAULT_BASE_URL: ClassVar[str] = "https://api.anthropic.com"
    """Where requests go without ``base_url``: the provider's own API."""

    type: Literal["anthropic"] = "anthropic"
    api_key_env: str = attrs.field(default="ANTHROPIC_API_KEY", validator=non_empty())
    max_output_tokens: int = attrs.field(default=8_192, validator=whole(1, MAX_OUTPUT_TOKENS))
    """Reply tokens per call, thinking included (the API requires a limit)."""
    thinking_budget: int | None = attrs.field(default=None, validator=_thinking)
    """Extended thinking: tokens the model may think for before it replies (at least
    1,024; ``null``: no extended thinking)."""
    prompt_caching: bool = attrs.field(default=True, validator=flag)
    """Mark the stable part of the prompt (tools and system prompt) as cacheable."""

    def max_temperature(self) -> float:
        return 1.0
