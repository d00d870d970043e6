"""Load and validate YAML configs. Every error names the field, what it expected and got.

What the loader refuses, beyond the schema's own checks:

- bytes that are not UTF-8 (the error names the byte and its line and column; a config is
  identifiers and numbers, where a guessed character would change the meaning), and files
  over :data:`~config.limits.MAX_CONFIG_BYTES`;
- a value of the wrong type: the string ``"no"`` is not ``false``, ``1.5`` is not a whole
  number, ``true`` is not ``1``, a list is not a persona; ``.nan`` and ``.inf`` are not numbers;
- YAML aliases that expand past :data:`~config.limits.MAX_YAML_ALIAS_NODES` nodes beyond
  those written out (an "alias bomb" is refused before anything is built from it), aliases
  to a node that contains them, and nesting past :data:`~config.limits.MAX_YAML_DEPTH`.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import attrs
import cattrs
import yaml
from cattrs.v import format_exception

from config.limits import MAX_CONFIG_BYTES, MAX_YAML_ALIAS_NODES, MAX_YAML_DEPTH
from config.schema import BackendConfig, ConclaveConfig
from config.schema.backends import BACKEND_TYPES
from config.secret import Secret

__all__ = ["ConfigError", "load_config", "parse_config", "parse_yaml"]

_converter = cattrs.Converter(forbid_extra_keys=True)


class ConfigError(ValueError):
    """A config file or value is wrong; the message says where and how to fix it."""


class _WrongType(ValueError):
    """A value of the wrong type; raised by the strict hooks below, reported by field."""


def _describe(value: Any) -> str:
    """A value as the message shows it: short, and in YAML's words where they differ."""
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else ("-.inf" if value < 0 else ".inf")
    if isinstance(value, dict | list | tuple):
        return "a list" if not isinstance(value, dict) else "a mapping"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _bool(value: Any, _type: Any) -> bool:
    if not isinstance(value, bool):
        raise _WrongType(f"expected true or false, got {_describe(value)}")
    return value


def _int(value: Any, _type: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _WrongType(f"expected a whole number, got {_describe(value)}")
    return value


def _float(value: Any, _type: Any) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise _WrongType(f"expected a number, got {_describe(value)}")
    if not math.isfinite(value):
        raise _WrongType(f"expected a finite number, got {_describe(value)}")
    return float(value)


def _str(value: Any, _type: Any) -> str:
    if not isinstance(value, str):
        hint = "; quote it to mean the text" if isinstance(value, bool | int | float) else ""
        raise _WrongType(f"expected a string, got {_describe(value)}{hint}")
    return value


def _secret(value: Any, _type: Any) -> Secret:
    return Secret(_str(value, str))


def _backend(value: Any, _type: Any) -> BackendConfig:
    """The section's ``type`` picks the class (:func:`parse_config` has checked it)."""
    cls = BACKEND_TYPES[value.get("type", "scripted")] if isinstance(value, dict) else None
    if cls is None:
        keys = ", ".join(f.name for f in attrs.fields(BACKEND_TYPES["scripted"]))
        raise _WrongType(f"expected a mapping (keys: {keys})")
    backend: BackendConfig = _converter.structure(value, cls)
    return backend


_converter.register_structure_hook(bool, _bool)
_converter.register_structure_hook(int, _int)
_converter.register_structure_hook(float, _float)
_converter.register_structure_hook(str, _str)
_converter.register_structure_hook(Secret, _secret)
_converter.register_unstructure_hook(Secret, Secret.to_json)
_converter.register_structure_hook(BackendConfig, _backend)


def load_config(path: str | os.PathLike[str]) -> ConclaveConfig:
    p = Path(path)
    try:
        with p.open("rb") as file:
            raw = file.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read config {p}: {exc.strerror or exc}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"{p} is larger than {MAX_CONFIG_BYTES // 1_048_576} MiB; a config is a small "
            "YAML file: pass the right path"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{p}: {_not_utf8(raw, exc)}") from None
    return parse_config(parse_yaml(text, source=str(p)), source=str(p))


def _not_utf8(raw: bytes, exc: UnicodeDecodeError) -> str:
    before = raw[: exc.start]
    line = before.count(b"\n") + 1
    column = exc.start - (before.rfind(b"\n") + 1) + 1
    return (
        f"byte 0x{raw[exc.start]:02x} at position {exc.start} (line {line}, column {column}) "
        "is not valid UTF-8; save the file as UTF-8"
    )


def parse_yaml(text: str, *, source: str = "config") -> Any:
    """The data of one YAML document, with aliases bounded (see the module docstring)."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        written, expanded = _node_counts(node, source)
        if expanded - written > MAX_YAML_ALIAS_NODES:
            raise ConfigError(
                f"{source}: its YAML aliases (*name) expand it by more than "
                f"{MAX_YAML_ALIAS_NODES:,} values (an alias bomb?); write the values out"
            )
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source} is not valid YAML: {exc}") from None
    except _TooDeep:
        raise ConfigError(
            f"{source}: YAML nested more than {MAX_YAML_DEPTH} levels deep; a config needs a few"
        ) from None
    finally:
        loader.dispose()


class _TooDeep(Exception):
    pass


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing nesting past :data:`MAX_YAML_DEPTH` as it composes:
    its composer recurses per level (a deep document would hit Python's recursion limit
    after seconds of scanning), and nothing deeper is meaningful in a config."""

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise _TooDeep
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _node_counts(root: yaml.Node, source: str) -> tuple[int, int]:
    """(nodes written, nodes once every alias is expanded), counting each distinct node once
    for the first and every time it is reached for the second. Iterative, with the expanded
    size of each node remembered, so a bomb costs what it is written as, not what it means."""
    size: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            size[key] = 1 + sum(size[id(child)] for child in _children(node))
            continue
        if key in size:
            continue
        if key in on_path:
            raise ConfigError(f"{source}: a YAML alias refers to a value that contains it")
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in size)
    return len(size), size[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


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
    orchestrator = data.get("orchestrator")
    if isinstance(orchestrator, dict) and "round_timeout" in orchestrator:
        # The old name of call_timeout, still accepted.
        renamed = {k: v for k, v in orchestrator.items() if k != "round_timeout"}
        renamed.setdefault("call_timeout", orchestrator["round_timeout"])
        data = {**data, "orchestrator": renamed}
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
        if not isinstance(kind, str) or kind not in BACKEND_TYPES:
            raise ConfigError(
                f"{source}: agent {agent.get('id', '?')!r}: backend type {_describe(kind)} is "
                f"not available; valid backend types: {', '.join(BACKEND_TYPES)}"
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
