"""Arguments are parsed and checked against the tool's schema; each error names the argument."""

from __future__ import annotations

from typing import Any

import pytest

from conclave.actors.tools.arguments import ArgumentError, parse_arguments

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1, "maxLength": 5},
        "count": {"type": "integer", "minimum": 1, "maximum": 10},
        "ratio": {"type": "number"},
        "flag": {"type": "boolean"},
        "mode": {"type": "string", "enum": ["fast", "slow"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "maybe": {"type": ["string", "null"]},
    },
    "required": ["path"],
    "additionalProperties": False,
}


def parse(raw: str) -> dict[str, Any]:
    return parse_arguments(raw, SCHEMA, tool="t")


def test_valid_arguments_come_back_as_a_dict() -> None:
    assert parse('{"path": "a", "count": 3, "ratio": 1, "flag": true}') == {
        "path": "a",
        "count": 3,
        "ratio": 1,
        "flag": True,
    }


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('{"path": ', "the arguments of t are not valid JSON"),
        ('["a"]', "the arguments of t must be a JSON object, got an array"),
        ("{}", "argument 'path' is required but missing; expected a string"),
        ('{"path": 3}', "argument 'path': expected a string, got an integer (3)"),
        ('{"path": ""}', "argument 'path': expected at least 1 characters, got 0"),
        ('{"path": "abcdef"}', "argument 'path': expected at most 5 characters, got 6"),
        ('{"path": "a", "count": 0}', "argument 'count': expected at least 1, got 0"),
        ('{"path": "a", "count": 11}', "argument 'count': expected at most 10, got 11"),
        ('{"path": "a", "count": 2.5}', "argument 'count': expected an integer, got a number"),
        ('{"path": "a", "count": true}', "argument 'count': expected an integer, got a boolean"),
        ('{"path": "a", "flag": "yes"}', "argument 'flag': expected a boolean, got a string"),
        ('{"path": "a", "mode": "warp"}', "argument 'mode': expected one of 'fast', 'slow'"),
        ('{"path": "a", "tags": ["x", 1]}', "argument 'tags[1]': expected a string"),
        ('{"path": "a", "maybe": 1}', "argument 'maybe': expected a string or a null"),
        ('{"path": "a", "colour": 1}', "argument 'colour' is not a parameter of this tool"),
    ],
)
def test_each_error_names_the_argument(raw: str, message: str) -> None:
    with pytest.raises(ArgumentError) as caught:
        parse(raw)
    assert message in str(caught.value)


def test_an_unknown_argument_lists_the_known_ones() -> None:
    with pytest.raises(ArgumentError, match="its parameters are: path, count, ratio"):
        parse('{"path": "a", "colour": 1}')


def test_empty_arguments_are_an_empty_object() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    assert parse_arguments("", schema, tool="t") == {}


def test_null_is_accepted_where_the_schema_allows_it() -> None:
    assert parse('{"path": "a", "maybe": null}')["maybe"] is None
