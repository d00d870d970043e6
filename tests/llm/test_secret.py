"""Keys are secrets in the type system: shown nowhere, compared by value, revealed on purpose."""

from __future__ import annotations

import json
import pickle

import attrs
import cattrs
import orjson
import pytest

from conclave.config.secret import MASK, Secret, secrets_in_use

KEY = "sk-ant-api03-SECRET-VALUE-abcdef0123456789"


def test_repr_str_and_format_are_masked() -> None:
    secret = Secret(KEY)
    assert repr(secret) == "Secret('********')"
    assert str(secret) == MASK
    assert f"{secret}" == MASK
    assert f"{secret:>10}" == f"{MASK:>10}"


def test_a_config_holding_a_secret_shows_only_the_mask() -> None:
    @attrs.frozen
    class Section:
        api_key: Secret

    assert KEY not in repr(Section(api_key=Secret(KEY)))


def test_the_json_form_is_the_mask() -> None:
    secret = Secret(KEY)
    assert json.dumps({"api_key": secret}, default=str) == '{"api_key": "********"}'
    converter = cattrs.Converter()
    converter.register_unstructure_hook(Secret, Secret.to_json)
    assert orjson.dumps(converter.unstructure({"api_key": secret})) == b'{"api_key":"********"}'


def test_an_unregistered_json_encoder_refuses_a_secret_rather_than_leak_it() -> None:
    with pytest.raises(TypeError):
        orjson.dumps({"api_key": Secret(KEY)})


def test_reveal_gives_the_key() -> None:
    assert Secret(KEY).reveal() == KEY


def test_secrets_are_equal_and_hash_alike_by_value() -> None:
    assert Secret(KEY) == Secret(KEY)
    assert hash(Secret(KEY)) == hash(Secret(KEY))
    assert Secret(KEY) != Secret(KEY + "x")
    assert Secret(KEY) != KEY


def test_pickling_carries_the_key() -> None:
    assert pickle.loads(pickle.dumps(Secret(KEY))).reveal() == KEY


def test_every_key_made_into_a_secret_is_remembered_for_redaction() -> None:
    Secret("sk-remember-me-0123456789")
    assert "sk-remember-me-0123456789" in secrets_in_use()


def test_short_values_are_not_remembered() -> None:
    Secret("ollama")
    assert "ollama" not in secrets_in_use()


def test_a_secret_holds_only_a_string() -> None:
    with pytest.raises(TypeError, match="holds a string"):
        Secret(123)  # type: ignore[arg-type]
