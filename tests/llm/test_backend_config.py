"""The ``openai`` and ``anthropic`` backend sections: their defaults, and what they refuse."""

from __future__ import annotations

from typing import Any

import pytest

from conclave.config.loader import ConfigError, parse_config
from conclave.config.schema.anthropic import AnthropicBackendConfig
from conclave.config.schema.endpoint import Price, Timeouts
from conclave.config.schema.openai import MaxTokensParam, OpenAIBackendConfig
from conclave.config.secret import Secret


def _backend(**section: Any) -> Any:
    return parse_config({"agents": [{"id": "a", "backend": section}]}).agents[0].backend


def _refused(**section: Any) -> str:
    with pytest.raises(ConfigError) as caught:
        _backend(**section)
    return str(caught.value)


def test_the_openai_defaults() -> None:
    backend = _backend(type="openai", model="gpt-test")
    assert isinstance(backend, OpenAIBackendConfig)
    assert backend.base_url is None
    assert backend.api_key is None
    assert backend.api_key_env == "OPENAI_API_KEY"
    assert backend.max_concurrency == 16
    assert backend.max_retries == 2
    assert backend.stream_usage is True
    assert backend.tool_choice_required is True
    assert backend.max_tokens_param is MaxTokensParam.MAX_COMPLETION_TOKENS
    assert backend.timeouts == Timeouts(
        connect=10.0, first_byte=20.0, first_token=300.0, stall=30.0, total=None
    )
    assert backend.requests_per_minute is None
    assert backend.price is None


def test_the_anthropic_defaults() -> None:
    backend = _backend(type="anthropic", model="claude-test")
    assert isinstance(backend, AnthropicBackendConfig)
    assert backend.api_key_env == "ANTHROPIC_API_KEY"
    assert backend.max_output_tokens == 8192
    assert backend.prompt_caching is True
    assert backend.thinking_budget is None
    assert backend.max_concurrency == 16


def test_a_key_in_the_config_loads_as_a_secret_and_never_shows() -> None:
    key = "sk-in-the-config-0123456789"
    backend = _backend(type="openai", model="m", api_key=key)
    assert backend.api_key == Secret(key)
    assert key not in repr(backend)


def test_every_setting_loads() -> None:
    backend = _backend(
        type="openai",
        model="m",
        base_url="http://localhost:11434/v1",
        temperature=0.7,
        max_output_tokens=1000,
        max_tokens_param="max_tokens",
        reasoning_effort="high",
        extra_headers={"X-Title": "Conclave"},
        extra_body={"top_k": 20, "options": {"num_ctx": 8192}},
        timeouts={"connect": 1, "first_byte": 90, "first_token": 900, "stall": 60, "total": 600},
        max_retries=5,
        max_concurrency=4,
        requests_per_minute=100,
        price={"input_per_mtok": 1.25, "output_per_mtok": 10, "cached_input_per_mtok": 0.125},
        stream_usage=False,
        tool_choice_required=False,
    )
    assert backend.timeouts == Timeouts(
        connect=1.0, first_byte=90.0, first_token=900.0, stall=60.0, total=600.0
    )
    assert backend.price == Price(
        input_per_mtok=1.25, output_per_mtok=10.0, cached_input_per_mtok=0.125
    )
    assert backend.extra_body == {"top_k": 20, "options": {"num_ctx": 8192}}
    assert backend.max_tokens_param is MaxTokensParam.MAX_TOKENS


def test_sections_with_the_same_settings_are_equal_and_hash_alike() -> None:
    one = _backend(type="openai", model="m", api_key="sk-same-0123456789", extra_body={"a": 1})
    two = _backend(type="openai", model="m", api_key="sk-same-0123456789", extra_body={"a": 1})
    assert one == two
    assert hash(one) == hash(two)


@pytest.mark.parametrize(
    ("section", "expected"),
    [
        ({"type": "openai"}, "agents[0].backend.model: the required key 'model' is missing"),
        ({"type": "openai", "model": ""}, "'model' must be a non-empty string"),
        ({"type": "openai", "model": "m", "base_url": "api.openai.com"}, "http:// or https://"),
        ({"type": "openai", "model": "m", "temperature": 3}, "from 0 to 2; got 3"),
        ({"type": "anthropic", "model": "m", "temperature": 1.5}, "from 0 to 1; got 1.5"),
        ({"type": "openai", "model": "m", "max_concurrency": 0}, "'max_concurrency' must be"),
        ({"type": "openai", "model": "m", "deployment": "d"}, "also needs 'api_version'"),
        ({"type": "openai", "model": "m", "bogus": 1}, "unknown key 'bogus' in agents[0].backend"),
        ({"type": "openai", "model": "m", "extra_headers": {"a": 1}}, "expected a string"),
        (
            {"type": "openai", "model": "m", "price": {"input_per_mtok": -1, "output_per_mtok": 1}},
            "'input_per_mtok' must be a number of dollars from 0",
        ),
        (
            {"type": "anthropic", "model": "m", "thinking_budget": 8192},
            "'thinking_budget' (8192) must be less than 'max_output_tokens' (8192)",
        ),
        (
            {"type": "anthropic", "model": "m", "thinking_budget": 500},
            "'thinking_budget' must be a whole number from 1024",
        ),
        (
            {"type": "anthropic", "model": "m", "thinking_budget": 2048, "temperature": 0.5},
            "'temperature' cannot be set with 'thinking_budget'",
        ),
        (
            {"type": "openai", "model": "m", "timeouts": {"stall": 0}},
            "'stall' must be more than 0",
        ),
    ],
)
def test_a_wrong_setting_is_refused_naming_it(section: dict[str, Any], expected: str) -> None:
    assert expected in _refused(**section)
