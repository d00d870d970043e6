"""One redaction pass removes every key in use and every key-shaped string."""

from __future__ import annotations

import json

from conclave.actors.llm.redaction import NO_REDACTION, REDACTED, Redactor, redact
from conclave.config.secret import MIN_SECRET_LENGTH, Secret


def test_a_key_in_use_is_removed_wherever_it_appears() -> None:
    key = "customkey-without-a-known-prefix-42"
    Secret(key)
    assert redact(f"401: bad key {key}; was {key}") == f"401: bad key {REDACTED}; was {REDACTED}"


def test_a_key_passed_in_is_removed() -> None:
    assert redact("token gw-abcdefghijkl rejected", ["gw-abcdefghijkl"]) == (
        f"token {REDACTED} rejected"
    )


def test_provider_key_shapes_are_removed_even_when_not_in_use() -> None:
    for key in (
        "sk-proj-AbCdEf0123456789",
        "sk-ant-api03-AbCdEf0123456789",
        "sk-or-v1-0123456789abcdef",
        "gsk_0123456789abcdefgh",
        "xai-0123456789abcdefgh",
        "AIzaSyA0123456789abcdefgh",
    ):
        assert redact(f"key {key} refused") == f"key {REDACTED} refused", key


def test_the_token_after_bearer_is_removed() -> None:
    assert redact("sent Authorization: Bearer abc.def-123456789") == (
        f"sent Authorization: Bearer {REDACTED}"
    )


def test_a_masked_echo_of_a_key_and_ordinary_words_are_left_alone() -> None:
    text = "Incorrect API key provided: sk-proj-****abcd. Ask the desk-clerk for a task-list."
    assert redact(text) == text


def test_short_keys_are_not_redacted_out_of_ordinary_text() -> None:
    assert redact("none of the keys", ["none"]) == "none of the keys"


def test_a_key_containing_another_is_removed_whole() -> None:
    inner = "inner-key-0123456789"
    assert redact(f"x {inner}-suffix y", [inner, f"{inner}-suffix"]) == f"x {REDACTED} y"


# --- the run's redactor: a fixed set of values ---------------------------------------------


def test_a_redactor_removes_every_occurrence_of_each_value() -> None:
    redactor = Redactor(["value-one-0123", "value-two-4567"])

    assert redactor("a value-one-0123 b value-two-4567 c value-one-0123") == (
        f"a {REDACTED} b {REDACTED} c {REDACTED}"
    )


def test_a_redactor_removes_a_value_as_json_escapes_it() -> None:
    value = 'quote"and\\slash-0123'
    arguments = json.dumps({"command": f"echo {value}"})

    assert value not in json.loads(Redactor([value])(arguments))["command"]
    assert json.loads(Redactor([value])(arguments)) == {"command": f"echo {REDACTED}"}


def test_a_redactor_removes_a_value_that_contains_another_whole() -> None:
    inner = "inner-key-0123456789"
    redactor = Redactor([inner, f"{inner}-suffix"])

    assert redactor(f"x {inner}-suffix y {inner}") == f"x {REDACTED} y {REDACTED}"


def test_a_redactor_leaves_values_shorter_than_the_minimum_alone() -> None:
    redactor = Redactor(["none", "x" * (MIN_SECRET_LENGTH - 1)])

    assert not redactor.active
    assert redactor("none of it: xxxxxxx") == "none of it: xxxxxxx"


def test_a_redactor_without_values_changes_nothing() -> None:
    assert not NO_REDACTION.active
    assert NO_REDACTION("sk-proj-AbCdEf0123456789") == "sk-proj-AbCdEf0123456789"
