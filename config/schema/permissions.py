"""The ``permissions`` section: which tool calls run at once, which ask a person, which never run.

``mode`` says what asks (:class:`PermissionMode`); ``allow`` and ``deny`` are rules on a tool's
name and the argument that says what it touches (a file tool's ``path``, ``run_shell``'s
``command``), written as Claude Code writes them: ``run_shell(git status*)``,
``write_file(docs/**)``, ``mcp__git__*``. A deny rule wins over everything, an allow rule over
the mode. Plan mode writes nothing whatever they say. How a call is decided is
:mod:`actors.tools.permissions`; who answers an ask is :mod:`actors.human.tool_approval`.

A rule naming no tool would do nothing, silently (a ``deny`` typo lets the call through), so
it is refused at its line: its name must be a built-in tool's (:data:`BUILTIN_TOOLS`), a
wildcard matching one, or an MCP tool's (``mcp__SERVER__TOOL``). An MCP server's tools are
known only once it starts, so of those only the ``mcp__`` shape is checked offline.
"""

from __future__ import annotations

import enum
import re
from typing import Any

import attrs

from conclave.config.problems import closest
from conclave.config.schema.checks import InvalidItem, InvalidItems

__all__ = ["BUILTIN_TOOLS", "PermissionMode", "PermissionsConfig", "ToolRule", "parse_rule"]

BUILTIN_TOOLS = (
    *("read_file", "list_directory", "glob", "search"),
    *("write_file", "edit_file", "delete_file", "run_shell"),
    *("launch_run", "ask_user", "record_assumption", "update_plan"),
    *("new_answer", "vote", "submit_plan", "reflect"),
)
"""Every built-in tool's name (the actors' specs define them; a spec checks the two agree):
the config cannot import the actors."""
MCP_PREFIX = "mcp__"


class PermissionMode(enum.Enum):
    ASK = "ask"
    """Every write, delete, non-read-only shell command and MCP tool that may write asks."""
    ACCEPT_EDITS = "accept-edits"
    """File writes inside the granted paths (and the plan's declared files, when a plan
    declares them) proceed; deletes, shell commands and other writes ask."""
    BYPASS = "bypass"
    """Nothing asks (deny rules still refuse): the default."""


_RULE = re.compile(r"(?P<tool>[A-Za-z0-9_*.-]+)(?:\((?P<pattern>.+)\))?")
RULE_FORMAT = "TOOL or TOOL(PATTERN), such as run_shell(git status*) or write_file(docs/**)"


@attrs.frozen(kw_only=True)
class ToolRule:
    """One ``allow``/``deny`` rule: a tool name (``*`` matches any run of characters) and,
    optionally, a pattern on the argument that says what the call touches."""

    text: str
    """The rule as written, for messages."""
    tool: str
    pattern: str | None = None
    """``None``: every call of the tool. In a path pattern ``*`` stays inside one directory
    and ``**`` crosses directories; in a command pattern ``*`` matches anything."""

    def matches(self, tool: str, subjects: tuple[str, ...], *, paths: bool) -> bool:
        """Whether a call of ``tool`` whose touched argument reads as any of ``subjects``
        (a path as written and as resolved; empty when the tool has no such argument)
        falls under this rule."""
        if not _glob(self.tool, paths=False).fullmatch(tool):
            return False
        if self.pattern is None:
            return True
        wanted = _glob(self.pattern, paths=paths)
        return any(wanted.fullmatch(subject) for subject in subjects)


def parse_rule(text: str) -> ToolRule:
    """``text`` as a rule; :class:`ValueError` saying the format when it is not one."""
    found = _RULE.fullmatch(text.strip()) if isinstance(text, str) else None
    if found is None:
        raise ValueError(f"{text!r} is not a rule; write {RULE_FORMAT}")
    return ToolRule(text=text.strip(), tool=found["tool"], pattern=found["pattern"])


def _glob(pattern: str, *, paths: bool) -> re.Pattern[str]:
    parts = re.split(r"(\*\*|\*|\?)", pattern)
    one = "[^/]*" if paths else ".*"
    table = {"**": ".*", "*": one, "?": "[^/]" if paths else "."}
    return re.compile("".join(table.get(part, re.escape(part)) for part in parts), re.DOTALL)


def unknown_tool(rule: ToolRule) -> str | None:
    """Why ``rule`` names no tool (with the closest built-in name), or ``None``."""
    tool = rule.tool
    if tool.startswith(MCP_PREFIX):
        if len(tool) > len(MCP_PREFIX):
            return None
        return f"{rule.text!r} names no MCP tool: write mcp__SERVER__TOOL or mcp__SERVER__*"
    if "*" in tool:
        wildcard = _glob(tool, paths=False)
        if any(wildcard.fullmatch(name) for name in BUILTIN_TOOLS):
            return None
        if MCP_PREFIX.startswith(tool.split("*", 1)[0]):
            return None  # may match an MCP tool's name
        return f"{rule.text!r} matches no tool: no built-in tool's name matches {tool!r}"
    if tool in BUILTIN_TOOLS:
        return None
    near = closest(tool, BUILTIN_TOOLS)
    if near is None and tool.startswith("mcp"):
        near = MCP_PREFIX + tool.removeprefix("mcp").lstrip("_")
    hint = f"did you mean {near!r}? " if near else ""
    return (
        f"{rule.text!r} names no tool: {tool!r} is not a built-in tool ({hint}an MCP server's "
        "tool is written mcp__SERVER__TOOL)"
    )


def _rules(_inst: object, attr: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, tuple):
        raise ValueError(f"{attr.name} must be a list of rules ({RULE_FORMAT})")
    refused = []
    for index, item in enumerate(value):
        try:
            rule = parse_rule(item)
        except ValueError as exc:
            refused.append(InvalidItem(str(exc), expected=RULE_FORMAT, index=index))
            continue
        if (why := unknown_tool(rule)) is not None:
            expected = "a built-in tool's name or mcp__SERVER__TOOL"
            refused.append(InvalidItem(why, expected=expected, index=index))
    if refused:
        raise InvalidItems(tuple(refused))


@attrs.frozen(kw_only=True)
class PermissionsConfig:
    mode: PermissionMode = PermissionMode.BYPASS
    """What asks; ``--permission-mode`` wins over it."""
    allow: tuple[str, ...] = attrs.field(default=(), validator=_rules)
    """Calls that run without asking (deny rules still win)."""
    deny: tuple[str, ...] = attrs.field(default=(), validator=_rules)
    """Calls that never run, in any mode; the model is told which rule refused it."""

    def allow_rules(self) -> tuple[ToolRule, ...]:
        return tuple(parse_rule(text) for text in self.allow)

    def deny_rules(self) -> tuple[ToolRule, ...]:
        return tuple(parse_rule(text) for text in self.deny)
