"""``${VAR}`` and ``${VAR:-default}`` from the environment, ``$${`` for a literal ``${``; an
unset variable without a default is an error naming it."""

from __future__ import annotations

import pytest

from conclave.config.interpolation import BadReference, MissingVariable, interpolate

ENV = {"HOST": "example.com", "EMPTY": ""}


def test_a_variable_is_replaced_by_its_value() -> None:
    assert interpolate("https://${HOST}/v1", ENV) == "https://example.com/v1"


def test_a_set_variable_wins_over_its_default() -> None:
    assert interpolate("${HOST:-localhost}", ENV) == "example.com"


def test_the_default_is_used_when_the_variable_is_unset() -> None:
    assert interpolate("${PORT:-8080}", ENV) == "8080"


def test_the_default_is_used_when_the_variable_is_empty() -> None:
    assert interpolate("${EMPTY:-fallback}", ENV) == "fallback"


def test_an_empty_variable_without_default_is_an_empty_value() -> None:
    assert interpolate("[${EMPTY}]", ENV) == "[]"


def test_an_unset_variable_without_default_is_an_error_naming_it() -> None:
    with pytest.raises(MissingVariable) as caught:
        interpolate("${OPENAI_API_KEY}", ENV)
    assert caught.value.name == "OPENAI_API_KEY"
    assert str(caught.value) == (
        "${OPENAI_API_KEY} names an environment variable that is not set; set "
        "OPENAI_API_KEY, or give a default as ${OPENAI_API_KEY:-value}"
    )


def test_double_dollar_brace_is_a_literal() -> None:
    assert interpolate("cost: $${HOST} and ${HOST}", ENV) == "cost: ${HOST} and example.com"


def test_a_dollar_not_before_a_brace_is_kept() -> None:
    assert interpolate("$5 or $HOST", ENV) == "$5 or $HOST"


def test_several_references_in_one_value() -> None:
    assert interpolate("${HOST}:${PORT:-80}", ENV) == "example.com:80"


@pytest.mark.parametrize("text", ["${HOST", "${1ABC}", "${}", "${A-B}"])
def test_a_malformed_reference_is_an_error_that_says_how_to_write_one(text: str) -> None:
    with pytest.raises(BadReference, match=r"\$\$\{ for a literal"):
        interpolate(text, ENV)
