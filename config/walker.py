"""Check a composed YAML document against the config schema, finding every problem at once.

The schema is the attrs classes of :mod:`config.schema`; the walker reads each field's type
(bool, int, float, str, ``Secret``, ``Path``, enums, ``Literal``, optional values, lists,
tuples, string-keyed mappings, nested sections, and unions of sections tagged by their
``type``) and checks the YAML node there, keeping the node's line and column for the
message. A wrong value is recorded and the walk goes on with its siblings, so one pass
reports every problem: unknown keys (with the closest valid key), missing keys, wrong types,
values outside a fixed set (with the valid values and the closest one), and what the
schema's own validators refuse.

Validators run one field at a time on an instance assembled without them (a section with a
wrong value cannot be built, but its other fields can still be checked); only a section with
no problem is then built for real, through its ``__init__``. Strings are interpolated from
the environment first (:mod:`config.interpolation`): an unquoted ``${N:-4}`` is the number 4,
as if 4 had been written.
"""

from __future__ import annotations

import enum
import math
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import attrs
import yaml

from conclave.config.interpolation import (
    BadReference,
    MissingVariable,
    interpolate,
    mentions_variables,
)
from conclave.config.problems import Problem, closest
from conclave.config.schema.checks import InvalidItem, InvalidItems, InvalidValue
from conclave.config.secret import MASK, Secret

__all__ = ["INVALID", "SchemaWalker", "describe", "supports"]

_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"


class _Invalid:
    """What the walk returns for a value it recorded a problem about."""

    def __repr__(self) -> str:
        return "INVALID"


INVALID: Any = _Invalid()

_SCALARS: dict[type, str] = {
    bool: "true or false",
    int: "a whole number",
    float: "a number",
    str: "a string",
    Secret: "a string (the key)",
    Path: "a path",
}


_BAD_KEY_REFERENCE = (
    "this key holds ${ that is not a reference (the key is not shown); write ${VAR} or "
    "${VAR:-default}, or $${ for a literal ${"
)


def describe(value: Any) -> str:
    """A value as a message shows it: short, and in YAML's words where they differ."""
    if value is None:
        return "null"
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else ("-.inf" if value < 0 else ".inf")
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def supports(tp: Any) -> bool:
    """Whether the walker can check a field of type ``tp`` (a spec checks every field of the
    schema, so a new field of a new kind of type is caught by a test, not by a user)."""
    if tp is Any or tp in _SCALARS or attrs.has(tp):
        return True
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return True
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Literal:
        return True
    if origin in (types.UnionType, typing.Union):
        rest = [a for a in args if a is not type(None)]
        return all(supports(a) for a in rest) and (len(rest) == 1 or _tagged(rest))
    if origin is tuple:
        return len(args) == 2 and args[1] is Ellipsis and supports(args[0])
    if origin is list:
        return supports(args[0])
    if origin is dict:
        return args[0] is str and supports(args[1])
    return False


def _tagged(members: list[Any]) -> bool:
    return all(attrs.has(m) and "type" in attrs.fields_dict(m) for m in members)


def _tag(member: Any) -> str:
    tag = attrs.fields_dict(member)["type"].default
    return str(tag.value if isinstance(tag, enum.Enum) else tag)


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _field_name(path: str) -> str:
    """``agents[0].backend`` → ``backend``: how messages name the value's field."""
    return path.rsplit(".", 1)[-1].split("[", 1)[0] or "config"


def _kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    return "a value"


class SchemaWalker:
    """One walk of one document. ``environ`` ``None``: strings are not interpolated (a config
    built from Python data). ``renamed`` maps a section's old key names to their new ones:
    still accepted, with a warning."""

    def __init__(
        self,
        *,
        source: str | None,
        environ: Mapping[str, str] | None,
        renamed: Mapping[type, Mapping[str, str]] | None = None,
    ) -> None:
        self.source = source
        self.errors: list[Problem] = []
        self.warnings: list[Problem] = []
        self.locations: dict[str, tuple[int, int]] = {}
        """Field path → (line, column) of its value, for checks made after loading."""
        self.built: dict[str, Any] = {}
        """Field path → each section built, so a document that did not load whole can still
        be checked across the sections that did (:mod:`config.unloaded`)."""
        self._environ = environ
        self._renamed = renamed or {}
        self._constructor = yaml.constructor.SafeConstructor()
        self._resolver = yaml.resolver.Resolver()
        self._scalars: dict[int, Any] = {}
        self._pairs_of: dict[int, list[tuple[str, yaml.Node, yaml.Node]]] = {}
        self._secret_nodes: set[int] = set()

    # -- problems ---------------------------------------------------------------------------

    def problem(
        self,
        node: yaml.Node | None,
        path: str,
        message: str,
        *,
        expected: str | None = None,
        got: str | None = None,
        suggestion: str | None = None,
        warning: bool = False,
    ) -> None:
        mark = node.start_mark if node is not None else None
        found = Problem(
            message=message,
            path=path,
            file=self.source,
            line=mark.line + 1 if mark is not None else None,
            column=mark.column + 1 if mark is not None else None,
            expected=expected,
            got=got if got is not None or node is None else self._as_written(node),
            suggestion=suggestion,
        )
        (self.warnings if warning else self.errors).append(found)

    def _as_written(self, node: yaml.Node) -> str:
        if id(node) in self._secret_nodes:
            return MASK
        return str(node.value) if isinstance(node, yaml.ScalarNode) else _kind(node)

    # -- the walk ---------------------------------------------------------------------------

    def walk(self, node: yaml.Node, tp: Any, path: str) -> Any:
        """The value of ``node`` as type ``tp``, or :data:`INVALID` with the problems
        recorded."""
        if node.start_mark is not None:
            self.locations.setdefault(path, (node.start_mark.line + 1, node.start_mark.column + 1))
        if tp is Any:
            return self._plain(node, path)
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin in (types.UnionType, typing.Union):
            return self._union(node, list(args), path)
        if origin is Literal:
            return self._choice(node, path, [str(a) for a in args], lambda v: v)
        if origin is tuple or origin is list:
            items = self._sequence(node, args[0], path)
            return items if items is INVALID else (tuple(items) if origin is tuple else items)
        if origin is dict:
            return self._mapping(node, args[1], path)
        if attrs.has(tp):
            return self._section(node, tp, path)
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return self._choice(node, path, [str(m.value) for m in tp], tp)
        if tp in _SCALARS:
            return self._typed(node, tp, path)
        raise TypeError(f"config.walker cannot check a field of type {tp!r} ({path})")

    def _union(self, node: yaml.Node, args: list[Any], path: str) -> Any:
        rest = [a for a in args if a is not type(None)]
        if Secret in rest:
            self._secret_nodes.add(id(node))
        if len(rest) < len(args) and isinstance(node, yaml.ScalarNode):
            value = self.scalar(node, path)
            if value is None or value is INVALID:
                return value
        if len(rest) == 1:
            return self.walk(node, rest[0], path)
        if _tagged(rest):
            return self._tagged_section(node, rest, path)
        raise TypeError(f"config.walker cannot check a union {args!r} ({path})")

    def _tagged_section(self, node: yaml.Node, members: list[Any], path: str) -> Any:
        """A section whose ``type`` key picks its class; without ``type``, the first."""
        tags = {_tag(m): m for m in members}
        name = _field_name(path)
        if not isinstance(node, yaml.MappingNode):
            self.problem(
                node,
                path,
                f"expected a mapping such as {{type: {next(iter(tags))}, ...}}, "
                f"got {self._shown(node, path)}",
                expected=f"a mapping with a 'type' key ({', '.join(tags)})",
            )
            return INVALID
        chosen = members[0]
        for key, _key_node, value_node in self.pairs(node, path):
            if key != "type":
                continue
            tag = (
                self.scalar(value_node, _child(path, "type"))
                if isinstance(value_node, yaml.ScalarNode)
                else None
            )
            if tag is INVALID:
                return INVALID
            if not isinstance(tag, str) or tag not in tags:
                valid = ", ".join(tags)
                shown = self._shown(value_node, _child(path, "type"))
                self.problem(
                    value_node,
                    _child(path, "type"),
                    f"{name} type {shown} is not available; valid {name} types: {valid}",
                    expected=f"one of: {valid}",
                    suggestion=closest(tag, tags) if isinstance(tag, str) else None,
                )
                return INVALID
            chosen = tags[tag]
        return self._section(node, chosen, path)

    def _section(self, node: yaml.Node, cls: Any, path: str) -> Any:
        fields = {f.name: f for f in attrs.fields(attrs.resolve_types(cls)) if f.init}
        if not isinstance(node, yaml.MappingNode):
            keys = ", ".join(fields)
            self.problem(
                node,
                path,
                f"expected a mapping (keys: {keys}), got {self._shown(node, path)}",
                expected=f"a mapping (keys: {keys})",
            )
            return INVALID
        given = self._given(node, cls, fields, path)
        values: dict[str, Any] = {}
        bad = False
        for name, field in fields.items():
            if name in given:
                value = self.walk(given[name][1], field.type, given[name][2])
                bad = bad or value is INVALID
                if value is not INVALID:
                    values[name] = value
            elif field.default is attrs.NOTHING:
                self.problem(
                    node,
                    _child(path, name),
                    f"the required key {name!r} is missing; add it to this mapping",
                    expected=f"a value for {name!r}",
                    got="nothing",
                )
                bad = True
        before = len(self.errors)
        self._validate(cls, fields, values, given, bad)
        if bad or len(self.errors) > before:
            return INVALID
        try:
            built = cls(**{fields[name].alias: value for name, value in values.items()})
        except (ValueError, TypeError) as exc:
            self.problem(node, path, str(exc), expected=getattr(exc, "expected", None))
            return INVALID
        self.built[path] = built
        return built

    def _given(
        self, node: yaml.MappingNode, cls: Any, fields: Mapping[str, Any], path: str
    ) -> dict[str, tuple[yaml.Node, yaml.Node, str]]:
        """Field name → (key node, value node, path as written), with unknown keys and old
        names reported."""
        renamed = self._renamed.get(cls, {})
        pairs = self.pairs(node, path)
        written = {key for key, _, _ in pairs}
        given: dict[str, tuple[yaml.Node, yaml.Node, str]] = {}
        for key, key_node, value_node in pairs:
            name = renamed.get(key, key)
            if name != key:
                if name in written:
                    self.problem(
                        key_node,
                        _child(path, key),
                        f"{key!r} is the old name of {name!r}, which is also given; remove {key!r}",
                        expected=f"only {name!r}",
                        got=key,
                    )
                    continue
                self.problem(
                    key_node,
                    _child(path, key),
                    f"{key!r} is the old name of {name!r}; rename it (the old name still "
                    "works, for now)",
                    expected=name,
                    got=key,
                    warning=True,
                )
            if name not in fields:
                suggestion = closest(key, fields)
                valid = ", ".join(fields)
                advice = "correct its spelling" if suggestion else f"valid keys: {valid}"
                self.problem(
                    key_node,
                    _child(path, key),
                    f"unknown key {key!r} in {path or 'the config'}; {advice}, or remove it",
                    expected=f"one of: {valid}",
                    got=key,
                    suggestion=suggestion,
                )
                continue
            given[name] = (key_node, value_node, _child(path, key))
        return given

    def _validate(
        self,
        cls: Any,
        fields: Mapping[str, Any],
        values: Mapping[str, Any],
        given: Mapping[str, tuple[yaml.Node, yaml.Node, str]],
        bad: bool,
    ) -> None:
        """Run each given field's validator on an instance assembled without validation,
        recording each refusal at the field. With ``bad`` (some field could not be read, and
        holds its default or ``None`` here), a validator that fails other than by refusing
        was reading that stand-in, and is not reported."""
        instance = object.__new__(cls)
        factories = []
        for name, field in fields.items():
            if name in values:
                value = self._converted(field, values[name], given[name][1], given[name][2])
                if value is INVALID:
                    bad = True
                    continue
            elif isinstance(field.default, attrs.Factory):  # type: ignore[arg-type]
                if field.default.takes_self:
                    factories.append(field)
                    continue
                value = field.default.factory()
            else:
                value = None if field.default is attrs.NOTHING else field.default
            object.__setattr__(instance, name, value)
        for field in factories:
            object.__setattr__(instance, field.name, field.default.factory(instance))
        for name, (_key_node, value_node, path) in given.items():
            validator = fields[name].validator
            if validator is None or name not in values or not hasattr(instance, name):
                continue
            try:
                validator(instance, fields[name], getattr(instance, name))
            except InvalidItems as exc:
                for item in exc.items:
                    self._item_problem(item, value_node, path)
            except InvalidItem as exc:
                self._item_problem(exc, value_node, path)
            except ValueError as exc:
                expected = exc.expected if isinstance(exc, InvalidValue) else None
                self.problem(value_node, path, str(exc), expected=expected)
            except Exception as exc:
                if not bad:
                    self.problem(value_node, path, str(exc))

    def _item_problem(self, exc: InvalidItem, value_node: yaml.Node, path: str) -> None:
        """``exc`` at the list item it names, else at the list."""
        at, where = value_node, path
        if isinstance(value_node, yaml.SequenceNode) and exc.index < len(value_node.value):
            at, where = value_node.value[exc.index], f"{path}[{exc.index}]"
        self.problem(at, where, str(exc), expected=exc.expected)

    def _converted(self, field: Any, value: Any, node: yaml.Node, path: str) -> Any:
        """``value`` through the field's converter (a plain function), as ``__init__`` would
        pass it; what the converter refuses is a problem at the field."""
        converter = field.converter
        if converter is None or isinstance(converter, attrs.Converter):
            return value
        try:
            return converter(value)
        except ValueError as exc:
            expected = exc.expected if isinstance(exc, InvalidValue) else None
            self.problem(node, path, str(exc), expected=expected)
            return INVALID

    def _choice(
        self, node: yaml.Node, path: str, valid: list[str], make: typing.Callable[[str], Any]
    ) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            self.problem(
                node,
                path,
                f"expected one of: {', '.join(valid)}; got {_kind(node)}",
                expected=f"one of: {', '.join(valid)}",
            )
            return INVALID
        value = self.scalar(node, path)
        if value is INVALID:
            return INVALID
        if not isinstance(value, str) or value not in valid:
            shown = ", ".join(valid)
            self.problem(
                node,
                path,
                f"{_field_name(path)} {describe(value)} is not one of: {shown}",
                expected=f"one of: {shown}",
                suggestion=closest(str(value), valid),
            )
            return INVALID
        return make(value)

    def _sequence(self, node: yaml.Node, item: Any, path: str) -> Any:
        if not isinstance(node, yaml.SequenceNode):
            self.problem(
                node,
                path,
                f"expected a list, got {self._shown(node, path)}",
                expected="a list",
            )
            return INVALID
        items = [self.walk(child, item, f"{path}[{i}]") for i, child in enumerate(node.value)]
        return INVALID if any(i is INVALID for i in items) else items

    def _mapping(self, node: yaml.Node, value_type: Any, path: str) -> Any:
        if not isinstance(node, yaml.MappingNode):
            self.problem(
                node,
                path,
                f"expected a mapping of names to values, got {self._shown(node, path)}",
                expected="a mapping",
            )
            return INVALID
        result = {
            key: self.walk(value_node, value_type, _child(path, key))
            for key, _, value_node in self.pairs(node, path)
        }
        return INVALID if any(v is INVALID for v in result.values()) else result

    def _typed(self, node: yaml.Node, tp: type, path: str) -> Any:
        expected = _SCALARS[tp]
        if tp is Secret:
            self._secret_nodes.add(id(node))
        if not isinstance(node, yaml.ScalarNode):
            self.problem(node, path, f"expected {expected}, got {_kind(node)}", expected=expected)
            return INVALID
        value = self.scalar(node, path)
        if value is INVALID:
            return INVALID
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if tp is bool and isinstance(value, bool):
            return value
        if tp is int and number and isinstance(value, int):
            return value
        if tp is float and number:
            if not math.isfinite(value):
                expected = "a finite number"
            else:
                return float(value)
        if tp is Path and isinstance(value, str) and not value.strip():
            expected = "a path, such as ./src"
        elif tp in (str, Secret, Path) and isinstance(value, str):
            return Secret(value) if tp is Secret else (Path(value) if tp is Path else value)
        shown = self._shown(node, path, value)
        hint = (
            "; quote it to mean the text"
            if tp is str and isinstance(value, bool | int | float)
            else ""
        )
        self.problem(node, path, f"expected {expected}, got {shown}{hint}", expected=expected)
        return INVALID

    def _shown(self, node: yaml.Node, path: str, value: Any = INVALID) -> str:
        """The value in a message; a key's is never shown."""
        if id(node) in self._secret_nodes:
            return "a value that is not a string" if value is not INVALID else _kind(node)
        if not isinstance(node, yaml.ScalarNode):
            return _kind(node)
        if value is INVALID:
            value = self.scalar(node, path)
        return describe(value)

    # -- YAML values ------------------------------------------------------------------------

    def scalar(self, node: yaml.ScalarNode, path: str) -> Any:
        """A scalar's value, interpolated once however often it is asked for."""
        key = id(node)
        if key not in self._scalars:
            self._scalars[key] = self._read_scalar(node, path)
        return self._scalars[key]

    def _read_scalar(self, node: yaml.ScalarNode, path: str) -> Any:
        try:
            value = self._constructor.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            self.problem(node, path, f"cannot read this value: {exc}")
            return INVALID
        if (
            self._environ is None
            or node.tag != _STR
            or not isinstance(value, str)
            or not mentions_variables(value)
        ):
            return value
        try:
            text = interpolate(value, self._environ)
        except MissingVariable as exc:
            self.problem(
                node, path, str(exc), expected=f"{exc.name} set in the environment", got=value
            )
            return INVALID
        except BadReference as exc:
            secret = id(node) in self._secret_nodes
            message = str(exc) if not secret else _BAD_KEY_REFERENCE
            got = MASK if secret else value
            self.problem(node, path, message, expected="${VAR} or ${VAR:-default}", got=got)
            return INVALID
        if node.style:  # quoted or a block: a string, whatever it holds (plain: None or "")
            return text
        tag: str = self._resolver.resolve(  # type: ignore[no-untyped-call]
            yaml.ScalarNode, text, (True, False)
        )
        typed = yaml.ScalarNode(tag, text, node.start_mark, node.end_mark)
        try:
            return self._constructor.construct_object(typed, deep=True)
        except yaml.YAMLError:
            return text

    def pairs(self, node: yaml.MappingNode, path: str) -> list[tuple[str, yaml.Node, yaml.Node]]:
        """(key, key node, value node) with YAML merge keys (``<<: *defaults``) applied; a
        key that is not text, or written twice, is a problem (YAML would keep only the last
        of two, silently)."""
        key = id(node)
        if key in self._pairs_of:
            return self._pairs_of[key]
        explicit = {id(k) for k, _ in node.value}
        try:
            self._constructor.flatten_mapping(node)
        except yaml.YAMLError as exc:
            self.problem(node, path, f"cannot apply a merge key (<<): {exc}")
        pairs: dict[str, tuple[str, yaml.Node, yaml.Node]] = {}
        for key_node, value_node in node.value:
            name = self.scalar(key_node, path) if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(name, str):
                shown = describe(name) if name is not None else _kind(key_node)
                self.problem(
                    key_node,
                    path,
                    f"a key must be a name, got {shown}",
                    expected="a name",
                )
                continue
            earlier = pairs.get(name)
            if earlier is not None and id(earlier[1]) in explicit:
                line = earlier[1].start_mark.line + 1 if earlier[1].start_mark else "?"
                self.problem(
                    key_node,
                    _child(path, name),
                    f"key {name!r} appears twice in this mapping (first on line {line}); "
                    "YAML would keep only the last: remove one",
                    expected="each key once",
                    got=name,
                )
            pairs[name] = (name, key_node, value_node)
        self._pairs_of[key] = result = list(pairs.values())
        return result

    def _plain(self, node: yaml.Node, path: str) -> Any:
        """Any value (``extra_body``): plain Python data, strings interpolated."""
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node, path)
        if isinstance(node, yaml.SequenceNode):
            items = [self._plain(child, f"{path}[{i}]") for i, child in enumerate(node.value)]
            return INVALID if any(i is INVALID for i in items) else items
        if isinstance(node, yaml.MappingNode):
            mapping = {k: self._plain(v, _child(path, k)) for k, _, v in self.pairs(node, path)}
            return INVALID if any(v is INVALID for v in mapping.values()) else mapping
        raise TypeError(f"not a YAML node: {node!r}")
