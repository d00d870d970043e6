"""Load configs: every problem of a file found in one pass, each with its line and column.

:func:`read_config` composes the YAML (keeping each value's line and column), interpolates
``${VAR}`` from the environment (:mod:`config.interpolation`) and walks the tree against the
schema (:mod:`config.walker`); a :class:`ConfigError` then lists every problem found, one per
line: file, line, column, field path, what was wrong, what was expected, and the closest
valid spelling. :func:`load_config` is the same, returning the config alone.

What the loader refuses before it walks (one problem, as nothing else can be read):

- bytes that are not UTF-8 (the error names the byte and its line and column; a config is
  identifiers and numbers, where a guessed character would change the meaning), and files
  over :data:`~config.limits.MAX_CONFIG_BYTES`;
- YAML that does not parse; aliases that expand past :data:`~config.limits.MAX_YAML_ALIAS_NODES`
  nodes beyond those written out (an "alias bomb" is refused before anything is built from
  it), aliases to a node that contains them, and nesting past
  :data:`~config.limits.MAX_YAML_DEPTH`.

What the walk refuses: a value of the wrong type (the string ``"no"`` is not ``false``,
``1.5`` is not a whole number, ``true`` is not ``1``, a list is not a persona; ``.nan`` and
``.inf`` are not numbers), unknown keys, missing keys, values outside a fixed set, and
whatever the schema's validators refuse. A config with such a problem is still checked
across the sections that could be read (:mod:`config.unloaded`: duplicate agent ids, votes
and visibility against the number of agents), so one pass reports every problem. Old key
names (:data:`RENAMED`) still load, with a warning.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import yaml

from conclave.config.limits import MAX_CONFIG_BYTES, MAX_YAML_ALIAS_NODES, MAX_YAML_DEPTH
from conclave.config.problems import ConfigError, Problem
from conclave.config.schema import ConclaveConfig, OrchestratorConfig
from conclave.config.unloaded import unloaded_problems
from conclave.config.walker import SchemaWalker

__all__ = [
    "RENAMED",
    "ConfigError",
    "LoadedConfig",
    "compose_yaml",
    "load_config",
    "parse_config",
    "parse_yaml",
    "read_config",
    "read_config_text",
]

RENAMED: Mapping[type, Mapping[str, str]] = {
    OrchestratorConfig: {"round_timeout": "call_timeout"},
}
"""Old key names a config may still use, per section: old → new."""


@attrs.frozen(kw_only=True)
class LoadedConfig:
    """A config read from a file, with what the reading found worth a warning."""

    config: ConclaveConfig
    source: str
    warnings: tuple[Problem, ...] = ()
    locations: Mapping[str, tuple[int, int]] = attrs.field(factory=dict, eq=False)
    """Field path (``agents[2].backend.vote``) → (line, column) of its value in the file,
    for checks made on the loaded config (:mod:`config.validation`)."""


def load_config(path: str | os.PathLike[str]) -> ConclaveConfig:
    """The config in the file at ``path``; :class:`ConfigError` lists every problem."""
    return read_config(path).config


def read_config(
    path: str | os.PathLike[str], *, environ: Mapping[str, str] | None = None
) -> LoadedConfig:
    """Read, interpolate (from ``environ``, by default the process's) and check the file."""
    p = Path(path)
    try:
        with p.open("rb") as file:
            raw = file.read(MAX_CONFIG_BYTES + 1)
    except IsADirectoryError:
        raise ConfigError(_a_directory(p)) from None
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
    return read_config_text(text, source=str(p), environ=environ)


def read_config_text(
    text: str, *, source: str, environ: Mapping[str, str] | None = None
) -> LoadedConfig:
    """:func:`read_config` for YAML text already in hand; ``source`` names it in messages."""
    node = compose_yaml(text, source=source)
    walker = SchemaWalker(
        source=source, environ=os.environ if environ is None else environ, renamed=RENAMED
    )
    config = _walk_root(walker, node)
    if config is None:
        raise ConfigError(problems=walker.errors, warnings=walker.warnings)
    return LoadedConfig(
        config=config,
        source=source,
        warnings=tuple(walker.warnings),
        locations=walker.locations,
    )


def parse_config(data: Any, *, source: str = "config") -> ConclaveConfig:
    """A config from Python data (what ``yaml.safe_load`` returns), held to the same checks
    as a file; no interpolation (the data already means what it says), no line numbers."""
    try:
        node = yaml.representer.SafeRepresenter().represent_data(data)
    except yaml.YAMLError as exc:
        raise ConfigError(
            f"{source}: {exc}; a config is plain data (mappings, lists, text, numbers)"
        ) from None
    walker = SchemaWalker(source=source, environ=None, renamed=RENAMED)
    config = _walk_root(walker, node)
    if config is None:
        raise ConfigError(problems=walker.errors)
    return config


def _walk_root(walker: SchemaWalker, node: yaml.Node | None) -> ConclaveConfig | None:
    """The config, or ``None`` with every problem in ``walker.errors``."""
    expected = "a mapping with an 'agents' list"
    if node is None:
        walker.problem(
            None,
            "",
            f"the file is empty; a config is {expected} (see config/examples/)",
            expected=expected,
            got="nothing",
        )
        return None
    if not isinstance(node, yaml.MappingNode):
        kind = "a list" if isinstance(node, yaml.SequenceNode) else "a single value"
        walker.problem(
            node, "", f"expected {expected}, got {kind} (see config/examples/)", expected=expected
        )
        return None
    config = walker.walk(node, ConclaveConfig, "")
    if isinstance(config, ConclaveConfig) and not walker.errors:
        return config
    walker.errors += unloaded_problems(walker, node)
    return None


def _a_directory(path: Path) -> str:
    """Why a directory is no config, and the YAML files in it that may be the one meant."""
    try:
        found = sorted(f.name for f in path.iterdir() if f.suffix in {".yaml", ".yml"})
    except OSError:
        found = []
    hint = f" (in it: {', '.join(found[:3])}{', ...' if len(found) > 3 else ''})" if found else ""
    return f"config {path} is a directory; pass a config file (.yaml){hint}"


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
    node = compose_yaml(text, source=source)
    if node is None:
        return None
    loader = _Loader("")
    try:
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source} is not valid YAML: {exc}") from None
    finally:
        loader.dispose()


def compose_yaml(text: str, *, source: str = "config") -> yaml.Node | None:
    """The node tree of one YAML document (``None`` when it is empty), each node with its
    line and column; aliases and nesting bounded (see the module docstring)."""
    loader = _Loader(text) if _FAST_LOADER is None else _FAST_LOADER(text)
    try:
        _check_depth(text)
        node = loader.get_single_node()
        if node is None:
            return None
        written, expanded = _node_counts(node, source)
        if expanded - written > MAX_YAML_ALIAS_NODES:
            raise ConfigError(
                f"{source}: its YAML aliases (*name) expand it by more than "
                f"{MAX_YAML_ALIAS_NODES:,} values (an alias bomb?); write the values out"
            )
        return node
    except yaml.MarkedYAMLError as exc:
        raise ConfigError(problems=[_syntax_problem(exc, source)]) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source} is not valid YAML: {exc}") from None
    except _TooDeep:
        raise ConfigError(
            f"{source}: YAML nested more than {MAX_YAML_DEPTH} levels deep; a config needs a few"
        ) from None
    finally:
        loader.dispose()


def _syntax_problem(exc: yaml.MarkedYAMLError, source: str) -> Problem:
    mark = exc.problem_mark or exc.context_mark
    what = exc.problem or "it cannot be parsed"
    context = ""
    if exc.context and exc.context_mark is not None:
        context = f" ({exc.context} on line {exc.context_mark.line + 1})"
    return Problem(
        message=f"this file is not valid YAML: {what}{context}; check the indentation, the "
        "brackets and the quotes around this point",
        file=source,
        line=mark.line + 1 if mark is not None else None,
        column=mark.column + 1 if mark is not None else None,
        expected="valid YAML",
    )


class _TooDeep(Exception):
    pass


_FAST_LOADER: type[yaml.CSafeLoader] | None = getattr(yaml, "CSafeLoader", None)
"""libyaml's loader, where PyYAML was built with it: it composes a config ten times faster
than the pure-Python one (2,000 agents: 0.2 s instead of 2.3 s)."""

_OPENS = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSES = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


def _check_depth(text: str) -> None:
    """Refuse nesting past :data:`MAX_YAML_DEPTH` before libyaml's composer, which recurses
    in C per level, sees it: libyaml's parser streams events, so counting them costs little
    and stops at the first level too deep. (The pure-Python :class:`_Loader` counts as it
    composes.)"""
    if _FAST_LOADER is None:
        return
    depth = 0
    for event in yaml.parse(text, Loader=_FAST_LOADER):
        if isinstance(event, _OPENS):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise _TooDeep
        elif isinstance(event, _CLOSES):
            depth -= 1


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
