"""TASKS.jsonl: one task per line, ``{"id", "task", "overrides"?, "expected"?, "grade"?,
"extract"?, "metadata"?}``; any other key is the task's own metadata, kept on its results.

Reading never stops at a bad line: each is reported with its line number and skipped, so one
typo in a thousand lines costs one task, not the batch. A line is bad when it is not JSON,
not an object, lacks ``task``, lacks ``id`` while other lines have one, has a key that is
a misspelling of one listed above (``expcted``: kept as metadata it would silently go
ungraded), repeats an ``id`` seen on an earlier line (the first one runs), names a grader
or an extraction that does not exist, or carries ``overrides`` the config validator refuses.
Blank lines are skipped silently.

A dataset with no id at all (no line has ``id``, and ``--id-field`` was not given: GSM8K and
most Hugging Face exports) is numbered instead: each line's id is ``line-N``, N its 1-based
line number, as lm-eval and inspect count on the position. It is stable while the file is
not reordered: resuming matches results by id, so after reordering, a task now on a line
that was done counts as done. A dataset where some lines have ids and others not is an
error on each line without one, as guessing there could make two tasks share an id.

``overrides`` edit the config as the config file would: ``{"orchestrator": {...}}`` sets
those orchestrator fields, ``{"agents": [...]}`` replaces the agents. They are checked with
the loader's own walker (same messages as ``conclave validate``), applied before the mode
table, and the result checked as ``conclave run`` checks its config.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import attrs
import yaml

from conclave.actors.run.turn import Turn
from conclave.config.limits import MAX_TASK_BYTES
from conclave.config.loader import RENAMED
from conclave.config.problems import ConfigError, Problem, closest
from conclave.config.schema import AgentConfig, ConclaveConfig, OrchestratorConfig
from conclave.config.walker import INVALID, SchemaWalker
from conclave.ui.batch.dataset import chat_task, read_rows
from conclave.ui.batch.extract import Extractor, parse_extractor
from conclave.ui.batch.grading import Grader, parse_grader

_T = TypeVar("_T")

__all__ = ["KEYS", "BadLine", "Fields", "TaskLine", "apply_overrides", "read_tasks"]

KEYS = ("id", "task", "overrides", "expected", "grade", "extract", "metadata")
_OVERRIDE_KEYS = ("orchestrator", "agents")


@attrs.frozen(kw_only=True)
class TaskLine:
    line: int
    """1-based, as editors count."""
    id: str | int
    """As written (results echo it); :attr:`key` is its text."""
    task: str
    overrides: Mapping[str, Any] | None = None
    expected: Any = None
    """``None`` when the line has none."""
    grader: Grader | None = None
    """The line's own ``"grade"``: wins over ``--grade``."""
    extractor: Extractor | None = None
    """The line's own ``"extract"``: wins over ``--extract``."""
    metadata: Mapping[str, Any] = attrs.field(factory=dict)
    """Its ``"metadata"`` object and every key not in :data:`KEYS`."""
    history: tuple[Turn, ...] = ()
    """With a chat input: the conversation's earlier turns."""

    @property
    def key(self) -> str:
        return str(self.id)


@attrs.frozen(kw_only=True)
class BadLine:
    line: int
    reason: str

    def render(self, source: str) -> str:
        return f"{source}:{self.line}: {self.reason}; the line was skipped"


@attrs.frozen(kw_only=True)
class Fields:
    """Which field of a row holds what (``--id-field``, ``--input-field``,
    ``--target-field``), for datasets whose names differ from Conclave's."""

    id: str = "id"
    id_named: bool = False
    """True when ``--id-field`` named :attr:`id`: then every line must have it, as a
    dataset without the field named is a mistake, not a dataset to number."""
    input: str = "task"
    target: str = "expected"

    def keys(self) -> tuple[str, ...]:
        return (self.id, self.input, self.target, *KEYS[3:])


def read_tasks(path: Path, fields: Fields | None = None) -> tuple[list[TaskLine], list[BadLine]]:
    """Every good line and every bad one, in file order (JSON Lines or CSV:
    :mod:`ui.batch.dataset`). Raises ``OSError`` if the file cannot be read at all, and
    :class:`~ui.batch.dataset.DatasetError` if it holds no line or is no dataset at all."""
    fields = fields if fields is not None else Fields()
    good: list[TaskLine] = []
    bad: list[BadLine] = []
    seen: dict[str, int] = {}
    rows = read_rows(path)
    has_ids = fields.id_named or any(
        not isinstance(row, str) and fields.id in row for _, row in rows
    )
    for number, row in rows:
        parsed = (
            BadLine(line=number, reason=row)
            if isinstance(row, str)
            else _parse(number, row, fields, numbered=not has_ids)
        )
        if isinstance(parsed, BadLine):
            bad.append(parsed)
            continue
        first = seen.get(parsed.key)
        if first is not None:
            bad.append(
                BadLine(
                    line=number,
                    reason=f"id {parsed.key!r} is already used on line {first}; "
                    "give every line its own id",
                )
            )
            continue
        seen[parsed.key] = number
        good.append(parsed)
    return good, bad


def _parse(
    number: int, data: Mapping[str, Any], fields: Fields, *, numbered: bool
) -> TaskLine | BadLine:
    """The line's task, or why it is bad; ``numbered``: the dataset has no ids, so a line's
    id is ``line-N``."""

    def bad(reason: str) -> BadLine:
        return BadLine(line=number, reason=reason)

    keys = fields.keys()
    metadata: dict[str, Any] = {}
    for key in data:
        if key in keys:
            continue
        meant = closest(key, keys)
        if meant is not None:
            return bad(
                f"unknown key {key!r}; did you mean {meant!r}? (keep your own fields under "
                '"metadata" when a name is this close)'
            )
        metadata[key] = data[key]
    given_metadata = data.get("metadata", {})
    if not isinstance(given_metadata, dict):
        return bad(f'"metadata" must be an object, got {_kind(given_metadata)}')
    metadata.update(given_metadata)
    id_key, input_key = fields.id, fields.input
    if numbered:
        id_: Any = f"line-{number}"
    elif id_key not in data and fields.id_named:
        return bad(
            f'the key "{id_key}" is missing; give the line an id (a string or a whole number), '
            "or name the field that holds it with --id-field"
        )
    elif id_key not in data:
        return bad(
            f'the key "{id_key}" is missing, though other lines have one; give every line an '
            "id (a string or a whole number), or none (each line is then numbered: line-7), "
            "or name the field that holds it with --id-field"
        )
    else:
        id_ = data[id_key]
    if isinstance(id_, bool) or not isinstance(id_, str | int) or str(id_).strip() == "":
        return bad(f'"{id_key}" must be a non-empty string or a whole number, got {_kind(id_)}')
    task = data.get(input_key)
    if task is None:
        return bad(
            f'the key "{input_key}" is missing; give the line its task as text or chat '
            "messages, or name the field that holds it with --input-field"
        )
    history: tuple[Turn, ...] = ()
    if isinstance(task, list):
        try:
            task, history = chat_task(task)
        except ValueError as exc:
            return bad(f'"{input_key}": {exc}')
    if not isinstance(task, str) or not task.strip():
        return bad(f'"{input_key}" must be non-empty text or chat messages, got {_kind(task)}')
    if len(task.encode("utf-8", "surrogatepass")) > MAX_TASK_BYTES:
        return bad(f'"{input_key}" is larger than {MAX_TASK_BYTES // 1_048_576} MiB; shorten it')
    overrides = data.get("overrides")
    if isinstance(overrides, str):  # a CSV cell
        try:
            overrides = json.loads(overrides)
        except json.JSONDecodeError:
            return bad('"overrides" must be a JSON object')
    if overrides is not None and not isinstance(overrides, dict):
        return bad(
            f'"overrides" must be an object such as {{"orchestrator": {{"run_timeout": 60}}}}, '
            f"got {_kind(overrides)}"
        )
    try:
        grader = _optional(data, "grade", parse_grader)
        extractor = _optional(data, "extract", parse_extractor)
    except ValueError as exc:
        return bad(str(exc))
    return TaskLine(
        line=number,
        id=id_,
        task=task.strip(),
        overrides=overrides,
        expected=data.get(fields.target),
        grader=grader,
        extractor=extractor,
        metadata=metadata,
        history=history,
    )


def _optional(data: Mapping[str, Any], key: str, parse: Callable[[str], _T]) -> _T | None:
    """``data[key]`` parsed, when given; ``ValueError`` (naming the key) when it is wrong."""
    if key not in data:
        return None
    value = data[key]
    if not isinstance(value, str):
        raise ValueError(f'"{key}" must be text such as "last-line", got {_kind(value)}')
    try:
        return parse(value)
    except ValueError as exc:
        raise ValueError(f'"{key}": {exc}') from None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"the text {value[:40]!r}"
    if isinstance(value, int | float):
        return f"the number {value}"
    return "a list" if isinstance(value, list) else "an object"


def apply_overrides(config: ConclaveConfig, overrides: Mapping[str, Any]) -> ConclaveConfig:
    """``config`` with a line's overrides applied; :class:`ConfigError` lists every problem
    (paths such as ``overrides.orchestrator.run_timeout``)."""
    unknown = sorted(set(overrides) - set(_OVERRIDE_KEYS))
    if unknown:
        raise ConfigError(
            problems=[
                Problem(
                    path=f"overrides.{unknown[0]}",
                    message=f"unknown key {unknown[0]!r}; overrides may set "
                    f"{' and '.join(_OVERRIDE_KEYS)}",
                    expected=" or ".join(_OVERRIDE_KEYS),
                    got=unknown[0],
                )
            ]
        )
    walker = SchemaWalker(source=None, environ=None, renamed=RENAMED)
    changes: dict[str, Any] = {}
    if "orchestrator" in overrides:
        node = _node(overrides["orchestrator"])
        walked = walker.walk(node, OrchestratorConfig, "overrides.orchestrator")
        if walked is not INVALID and isinstance(overrides["orchestrator"], dict):
            renamed = RENAMED.get(OrchestratorConfig, {})
            known = attrs.fields_dict(OrchestratorConfig)
            # An unknown key is already one of the walker's errors; it only must not be read.
            given = {renamed.get(key, key) for key in overrides["orchestrator"]} & set(known)
            fields = {name: getattr(walked, name) for name in given}
            changes["orchestrator"] = attrs.evolve(config.orchestrator, **fields)
    if "agents" in overrides:
        agents = walker.walk(
            _node(overrides["agents"]), tuple[AgentConfig, ...], "overrides.agents"
        )
        if agents is not INVALID:
            changes["agents"] = agents
    if walker.errors:
        raise ConfigError(problems=walker.errors)
    try:
        return attrs.evolve(config, **changes)
    except ValueError as exc:
        raise ConfigError(problems=[Problem(path="overrides", message=str(exc))]) from None


def _node(data: Any) -> yaml.Node:
    node: yaml.Node = yaml.representer.SafeRepresenter().represent_data(data)
    return node
