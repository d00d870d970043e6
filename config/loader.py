"""Load and validate YAML configs. Every error names the field, what it expected and got."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs
import cattrs
import yaml
from cattrs.v import format_exception

from config.schema import ConclaveConfig

__all__ = ["ConfigError", "load_config", "parse_config"]

_converter = cattrs.Converter(forbid_extra_keys=True)


class ConfigError(ValueError):
    """A config file or value is wrong; the message says where and how to fix it."""


def load_config(path: str | os.PathLike[str]) -> ConclaveConfig:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config {p}: {exc.strerror or exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p} is not valid YAML: {exc}") from None
    return parse_config(data, source=str(p))


def parse_config(data: Any, *, source: str = "config") -> ConclaveConfig:
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: expected a mapping with an 'agents' list, got {type(data).__name__}"
        )
    if "agents" in data:
        agents = data["agents"]
        if not isinstance(agents, list):
            # cattrs would iterate a string letter by letter and report each letter.
            raise ConfigError(
                f"{source}: agents must be a list of agents, got {type(agents).__name__}"
            )
        data = {**data, "agents": [_with_backend_default(a, source) for a in agents]}
    try:
        return _converter.structure(data, ConclaveConfig)
    except cattrs.BaseValidationError as exc:
        lines = cattrs.transform_error(exc, path="config", format_exception=_format)
        problems = "; ".join(_explain(line) for line in lines)
        raise ConfigError(f"{source}: {problems}") from None
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{source}: {exc}") from None


def _with_backend_default(agent: Any, source: str) -> Any:
    if isinstance(agent, dict) and isinstance(agent.get("backend"), dict):
        backend = agent["backend"]
        kind = backend.get("type", "scripted")
        if kind != "scripted":
            raise ConfigError(
                f"{source}: agent {agent.get('id', '?')!r}: backend type {kind!r} is not "
                "available; valid backend types: scripted"
            )
    return agent


def _format(exc: BaseException, type_: Any) -> str:
    """Validators' own messages say what was wrong; keep them instead of "invalid value".
    A plain value where a section belongs fails inside cattrs as an AttributeError, which it
    would report as "unknown error"; say which mapping was expected instead."""
    if isinstance(exc, ValueError) and not isinstance(exc, cattrs.BaseValidationError):
        return str(exc)
    if attrs.has(type_) and isinstance(exc, AttributeError | TypeError):
        keys = ", ".join(f.name for f in attrs.fields(type_))
        return f"expected a mapping (keys: {keys})"
    return format_exception(exc, type_)


def _explain(line: str) -> str:
    """cattrs says "invalid value for type, expected X @ $.path"; add valid enum values."""
    from config import schema

    for name in ("FinalAnswerStrategy", "InFlightPolicy", "Misbehaviour"):
        enum_cls = getattr(schema, name)
        if name in line:
            valid = ", ".join(m.value for m in enum_cls)
            return f"{line} (valid values: {valid})"
    return line
