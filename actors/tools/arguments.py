"""Parsing a call's JSON arguments and checking them against the tool's schema.

Only the JSON-schema subset the tools use: ``type``, ``properties``, ``required``,
``additionalProperties: false``, ``enum``, ``minimum``/``maximum``, ``minLength``/``maxLength``
and ``items``. Each error names the argument, what was expected and what came, so the model
can correct its next call.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["ArgumentError", "parse_arguments"]


class ArgumentError(Exception):
    """Arguments that do not fit the schema; the message is for the model."""


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def parse_arguments(raw: str, schema: dict[str, Any], *, tool: str) -> dict[str, Any]:
    """The call's arguments as a dict, checked against ``schema``; raises
    :class:`ArgumentError` naming what is wrong."""
    try:
        value = orjson.loads(raw) if raw.strip() else {}
    except orjson.JSONDecodeError as exc:
        raise ArgumentError(
            f"the arguments of {tool} are not valid JSON ({exc}); "
            "send one JSON object with the parameters by name"
        ) from None
    if not isinstance(value, dict):
        raise ArgumentError(
            f"the arguments of {tool} must be a JSON object, got {_kind(value)}; "
            "send the parameters by name"
        )
    _check(value, schema, where=None)
    return value


def _check(value: Any, schema: dict[str, Any], *, where: str | None) -> None:
    wanted = schema.get("type")
    if wanted is not None and not _is(value, wanted):
        raise ArgumentError(f"{_name(where)}: expected {_article(wanted)}, got {_kind(value)}")
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(repr(v) for v in schema["enum"])
        raise ArgumentError(f"{_name(where)}: expected one of {allowed}, got {value!r}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is not None and value < low:
            raise ArgumentError(f"{_name(where)}: expected at least {low}, got {value}")
        if high is not None and value > high:
            raise ArgumentError(f"{_name(where)}: expected at most {high}, got {value}")
    if isinstance(value, str):
        shortest, longest = schema.get("minLength"), schema.get("maxLength")
        if shortest is not None and len(value) < shortest:
            raise ArgumentError(
                f"{_name(where)}: expected at least {shortest} characters, got {len(value)}"
            )
        if longest is not None and len(value) > longest:
            raise ArgumentError(
                f"{_name(where)}: expected at most {longest} characters, got {len(value)}"
            )
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            _check(item, schema["items"], where=f"{where or 'arguments'}[{i}]")
    if isinstance(value, dict):
        _check_object(value, schema, where=where)


def _check_object(value: dict[str, Any], schema: dict[str, Any], *, where: str | None) -> None:
    properties: dict[str, Any] = schema.get("properties", {})
    for name in schema.get("required", ()):
        if name not in value:
            raise ArgumentError(
                f"{_name(_join(where, name))} is required but missing; "
                f"expected {_article(properties.get(name, {}).get('type', 'value'))}"
            )
    for name, item in value.items():
        if name in properties:
            _check(item, properties[name], where=_join(where, name))
        elif schema.get("additionalProperties") is False:
            known = ", ".join(properties) or "none"
            raise ArgumentError(
                f"{_name(_join(where, name))} is not a parameter of this tool; "
                f"its parameters are: {known}"
            )


def _is(value: Any, wanted: str | list[str]) -> bool:
    kinds = [wanted] if isinstance(wanted, str) else wanted
    for kind in kinds:
        if kind == "null" and value is None:
            return True
        types = _TYPES.get(kind, ())
        if isinstance(value, bool) and kind in ("integer", "number"):
            continue
        if isinstance(value, types):
            return True
    return False


def _join(where: str | None, name: str) -> str:
    return name if where is None else f"{where}.{name}"


def _name(where: str | None) -> str:
    return f"argument {where!r}" if where else "the arguments"


def _article(kind: str | list[str]) -> str:
    if isinstance(kind, list):
        return " or ".join(_article(k) for k in kind)
    return f"an {kind}" if kind[:1] in "aeiou" else f"a {kind}"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int):
        return f"an integer ({value})"
    if isinstance(value, float):
        return f"a number ({value})"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:40] + "…"
        return f"a string ({shown!r})"
    if isinstance(value, list):
        return "an array"
    return "an object"
