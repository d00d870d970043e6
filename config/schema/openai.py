"""The ``openai`` backend section: any OpenAI-compatible Chat Completions endpoint.

OpenAI itself, Azure OpenAI (``api_version`` and ``deployment``), vLLM, SGLang, Ollama,
LM Studio, OpenRouter, Groq, xAI and Gemini's OpenAI-compatible endpoint: ``base_url`` says
which. The switches below exist because compatible servers differ from OpenAI's own.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar, Literal

import attrs

from conclave.config.schema.checks import whole
from conclave.config.schema.endpoint import MAX_OUTPUT_TOKENS, HttpBackendConfig, flag, non_empty

__all__ = ["MaxTokensParam", "OpenAIBackendConfig", "ReasoningEffort"]


class MaxTokensParam(enum.Enum):
    """The request field that carries ``max_output_tokens``."""

    MAX_COMPLETION_TOKENS = "max_completion_tokens"
    """OpenAI's current name (reasoning models accept only this one)."""
    MAX_TOKENS = "max_tokens"
    """The older name, for servers that do not know the new one."""


class ReasoningEffort(enum.Enum):
    NONE = "none"
    MINIMAL = "minimal"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    XHIGH = "xhigh"


def _azure(inst: OpenAIBackendConfig, attr: attrs.Attribute[Any], value: Any) -> None:
    non_empty(optional=True)(inst, attr, value)
    if inst.deployment is not None and inst.api_version is None:
        raise ValueError(
            "'deployment' is for Azure OpenAI, which also needs 'api_version' (such as "
            "2024-10-21); set both, or neither for other servers"
        )


@attrs.frozen(kw_only=True)
class OpenAIBackendConfig(HttpBackendConfig):
    DEFAULT_BASE_URL: ClassVar[str] = "https://api.openai.com/v1"
    """Where requests go without ``base_url``: the provider's own API."""

    type: Literal["openai"] = "openai"
    api_key_env: str = attrs.field(default="OPENAI_API_KEY", validator=non_empty())
    max_output_tokens: int | None = attrs.field(
        default=None, validator=whole(1, MAX_OUTPUT_TOKENS, optional=True)
    )
    """Reply tokens per call (``null``: the server's default)."""
    max_tokens_param: MaxTokensParam = MaxTokensParam.MAX_COMPLETION_TOKENS
    reasoning_effort: ReasoningEffort | None = None
    stream_usage: bool = attrs.field(default=True, validator=flag)
    """Ask for token usage at the end of the stream (``stream_options``); turn it off for a
    server that rejects ``stream_options``."""
    tool_choice_required: bool = attrs.field(default=True, validator=flag)
    """Send ``tool_choice: required`` where a reply must call a tool (coordination rounds);
    a server that refuses it (a 400 about ``tool_choice``) is asked again with ``auto``, and
    sent ``auto`` from then on; turn it off to send ``auto`` from the start (the prompt still
    asks for the call)."""
    api_version: str | None = attrs.field(default=None, validator=non_empty(optional=True))
    """Azure OpenAI's API version; with it, ``base_url`` is the Azure resource endpoint."""
    deployment: str | None = attrs.field(default=None, validator=_azure)
    """Azure OpenAI's deployment name (``null``: the ``model``)."""
