"""Whether a tool call runs at once, asks a person first, or never runs.

The ``permissions`` config section (:mod:`config.schema.permissions`) and what a person
allowed for the session decide, in this order: a ``deny`` rule refuses (in every mode); a
read-only tool runs; an ``allow`` rule or a session allowance lets the call run; ``bypass``
lets everything run; ``accept-edits`` lets file writes run (inside the plan's declared files
when an executing plan declares them; never git's own files, which can make a read-only git
command run a program); a read-only shell command (``git status``, ``ls``)
runs; everything else asks. Pure: the asking is :mod:`actors.human.tool_approval`'s.
"""

from __future__ import annotations

import enum
import functools
import os
import re
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from conclave.config.schema.permissions import PermissionMode, PermissionsConfig, ToolRule

__all__ = [
    "FILE_EDITS",
    "PATH_ARGUMENTS",
    "READ_ONLY_GIT",
    "READ_ONLY_PROGRAMS",
    "Permissions",
    "Ruling",
    "SessionAllowances",
    "Verdict",
    "is_read_only_command",
    "subjects_of",
]

FILE_EDITS = frozenset({"write_file", "edit_file"})
"""What ``accept-edits`` lets run: tools that write a file's content (not ``delete_file``)."""
PATH_ARGUMENTS = ("path", "file_path", "repo_path", "source", "destination")
"""The argument naming what a tool touches, first present wins; MCP tools are read the same
way as built-in ones."""
_COMMAND_ARGUMENTS = ("command", "cmd")
READ_ONLY_PROGRAMS = frozenset(
    {"ls", "cat", "head", "tail", "pwd", "wc", "grep", "rg", "diff", "stat", "tree", "which"}
)
READ_ONLY_GIT = frozenset({"status", "diff", "log", "show"})
_SHELL_SYNTAX = frozenset(";&|<>`$(){}\n\\")
"""Any of these makes a command more than one program run plainly: it asks."""
_COMMAND_SEPARATORS = re.compile(r"&&|\|\||[;&|\n(){}`]")
"""Where a list, a pipeline, a subshell, a group or a substitution splits into commands."""
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPERS = frozenset({"builtin", "command", "env", "exec", "nohup", "sudo", "time"})
"""Programs that run the rest of their words as a command (their own ``-options`` and, for
``env``, ``NAME=value`` words skipped)."""
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
_GIT_CONTROL_FILES = frozenset({".gitattributes", ".gitconfig"})
"""With anything under a ``.git`` directory: files that can make a read-only git command run a
program (``core.fsmonitor`` runs on ``git status``; a diff driver or ``textconv`` on ``git
diff``, ``log`` and ``show``), so writing one is never just an edit."""
_WRITES_BY_OPTION = {"rg": ("--pre",), "tree": ("-o",)}
"""Options that make a read-only program run another program or write a file."""


class Verdict(enum.Enum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


@attrs.frozen(kw_only=True)
class Ruling:
    verdict: Verdict
    reason: str = ""
    """Why it asks (for the person) or is denied (for the model); empty when allowed."""


def is_read_only_command(command: str) -> bool:
    """Whether ``command`` is one plain run of a program that only reads (``ls``, ``cat``,
    ``git status``...): no redirection, pipe, list, substitution or escape. Anything else,
    ``find`` (``-delete``) and ``sort`` (``-o``) included, is not."""
    if any(char in _SHELL_SYNTAX for char in command):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if not words:
        return False
    if any(word.startswith(_WRITES_BY_OPTION.get(words[0], ())) for word in words[1:]):
        return False
    if words[0] == "git":
        writes_output = any(word.startswith("--output") for word in words)
        return len(words) > 1 and words[1] in READ_ONLY_GIT and not writes_output
    return words[0] in READ_ONLY_PROGRAMS


@attrs.frozen(kw_only=True)
class Subjects:
    """What a call touches, as rules match it."""

    texts: tuple[str, ...] = ()
    """A path as written, relative to the workspace and absolute; or a command."""
    paths: bool = True
    shown: str | None = None
    """The one text a person is shown (the path or command as written)."""


def subjects_of(arguments: Mapping[str, Any], workspace: Path) -> Subjects:
    """The argument a rule's pattern is matched against: a command, else a path (as
    written, relative to ``workspace`` when inside it, and absolute); none for a tool that
    names neither."""
    for name in _COMMAND_ARGUMENTS:
        value = arguments.get(name)
        if isinstance(value, str):
            return Subjects(texts=(value,), paths=False, shown=value)
    for name in PATH_ARGUMENTS:
        value = arguments.get(name)
        if isinstance(value, str):
            absolute = os.path.normpath(os.path.join(workspace, value))
            relative = os.path.relpath(absolute, workspace)
            inside = relative != ".." and not relative.startswith("../")
            texts = (value, relative, absolute) if inside else (value, absolute)
            return Subjects(texts=tuple(dict.fromkeys(texts)), paths=True, shown=value)
    return Subjects()


class SessionAllowances:
    """What a person allowed "for this session": a shell command exactly as it was written,
    any other tool whole. Owned by whoever outlives the runs (a REPL session, a headless
    process), shared by every agent of every run it starts. Exact, not patterns: allowing
    ``rm *.txt`` once must not allow ``rm -rf ~/*.txt``."""

    def __init__(self) -> None:
        self._allowed: set[tuple[str, str | None]] = set()

    def add(self, tool: str, subjects: Subjects) -> None:
        self._allowed.add((tool, None if subjects.paths else subjects.shown))

    def covers(self, tool: str, subjects: Subjects) -> bool:
        if (tool, None) in self._allowed:
            return True
        return not subjects.paths and (tool, subjects.shown) in self._allowed


@attrs.frozen(kw_only=True)
class Permissions:
    """The rules one agent's calls are held to."""

    mode: PermissionMode = PermissionMode.BYPASS
    allow: tuple[ToolRule, ...] = ()
    deny: tuple[ToolRule, ...] = ()
    declared_files: tuple[str, ...] | None = None
    """The files an executing plan declares (``None``: no plan declares any)."""

    @classmethod
    def from_config(
        cls, config: PermissionsConfig, *, declared_files: tuple[str, ...] | None = None
    ) -> Permissions:
        return cls(
            mode=config.mode,
            allow=config.allow_rules(),
            deny=config.deny_rules(),
            declared_files=declared_files,
        )

    def rule(
        self,
        tool: str,
        *,
        read_only: bool,
        subjects: Subjects,
        session: SessionAllowances | None = None,
    ) -> Ruling:
        """Whether a call of ``tool`` touching ``subjects`` runs, asks or never runs."""
        # The command is split into what it runs once, and only if a deny rule asks.
        commands = functools.cache(functools.partial(_commands_of, subjects))
        for rule in self.deny:
            if _denies(rule, tool, subjects, commands):
                return Ruling(
                    verdict=Verdict.DENY,
                    reason=f"the permissions.deny rule {rule.text!r} forbids it",
                )
        if read_only:
            return Ruling(verdict=Verdict.ALLOW)
        if any(_allows(rule, tool, subjects) for rule in self.allow):
            return Ruling(verdict=Verdict.ALLOW)
        if session is not None and session.covers(tool, subjects):
            return Ruling(verdict=Verdict.ALLOW)
        if self.mode is PermissionMode.BYPASS:
            return Ruling(verdict=Verdict.ALLOW)
        if self.mode is PermissionMode.ACCEPT_EDITS and tool in FILE_EDITS:
            if _controls_git(subjects):
                return Ruling(
                    verdict=Verdict.ASK,
                    reason=f"{tool} writes {subjects.shown}, which can make read-only git "
                    "commands run programs",
                )
            if self.declared_files is None or self._declared(subjects):
                return Ruling(verdict=Verdict.ALLOW)
            return Ruling(
                verdict=Verdict.ASK,
                reason=f"{tool} writes {subjects.shown}, which the plan does not declare",
            )
        command = subjects.shown if not subjects.paths else None
        if command is not None and is_read_only_command(command):
            return Ruling(verdict=Verdict.ALLOW)
        return Ruling(verdict=Verdict.ASK, reason=_why(tool, subjects, self.mode))

    def _declared(self, subjects: Subjects) -> bool:
        declared = {os.path.normpath(path) for path in self.declared_files or ()}
        return any(os.path.normpath(text) in declared for text in subjects.texts)


def _controls_git(subjects: Subjects) -> bool:
    for text in subjects.texts:
        parts = Path(text).parts
        if ".git" in parts[:-1] or (parts and parts[-1] in _GIT_CONTROL_FILES):
            return True
    return False


def _allows(rule: ToolRule, tool: str, subjects: Subjects) -> bool:
    """Whether allow ``rule`` covers the call. A command pattern covers one plain command, as
    Claude Code's prefix rules do: ``git status*`` must not let ``git status; rm -rf ~`` run.
    Shell syntax the pattern writes itself (``npm test | tee *``) is the person's choice."""
    if not rule.matches(tool, subjects.texts, paths=subjects.paths):
        return False
    if subjects.paths or rule.pattern is None:
        return True
    written = set(rule.pattern)
    return not any(c in _SHELL_SYNTAX and c not in written for t in subjects.texts for c in t)


def _denies(
    rule: ToolRule, tool: str, subjects: Subjects, commands: Callable[[], tuple[str, ...]]
) -> bool:
    """Whether deny ``rule`` refuses the call: a command pattern refuses any command the
    call's command holds (``git push*`` refuses ``cd repo && git push``, ``(git push)``,
    ``echo $(git push)``), also as it runs once quoting, ``NAME=value`` words, wrappers
    (``env``, ``command``...), a program's directory and ``sh -c`` are seen through
    (``FOO=1 /usr/bin/git 'push'``, ``sh -c 'git push'``)."""
    if rule.matches(tool, subjects.texts, paths=subjects.paths):
        return True
    if subjects.paths or rule.pattern is None:
        return False
    return rule.matches(tool, commands(), paths=False)


def _commands_of(subjects: Subjects) -> tuple[str, ...]:
    return tuple(c for text in subjects.texts for c in _commands_within(text, depth=3))


def _commands_within(text: str, *, depth: int) -> list[str]:
    """The commands ``text`` runs, each as written and as its words run (see
    :func:`_denies`); a shell's ``-c`` script is read ``depth`` levels deep."""
    found = []
    for part in _COMMAND_SEPARATORS.split(text):
        part = part.strip()
        if not part:
            continue
        found.append(part)
        try:
            words = shlex.split(part)
        except ValueError:
            words = part.split()
        words = _unwrapped(words)
        if not words:
            continue
        found.append(" ".join(words))
        script = words[2] if len(words) > 2 and words[1].startswith("-") else None
        if words[0] in _SHELLS and script is not None and "c" in words[1] and depth > 0:
            found += _commands_within(script, depth=depth - 1)
        if words[0] == "eval" and depth > 0:
            found += _commands_within(" ".join(words[1:]), depth=depth - 1)
    return found


def _unwrapped(words: list[str]) -> list[str]:
    """``words`` without leading ``NAME=value`` words and wrappers, the program by its name."""
    while words:
        if _ASSIGNMENT.match(words[0]):
            words = words[1:]
        elif os.path.basename(words[0]) in _WRAPPERS:
            words = words[1:]
            while words and (words[0].startswith("-") or _ASSIGNMENT.match(words[0])):
                words = words[1:]
        else:
            return [os.path.basename(words[0]), *words[1:]]
    return words


def _why(tool: str, subjects: Subjects, mode: PermissionMode) -> str:
    what = {
        "delete_file": f"deletes {subjects.shown}",
        "run_shell": f"runs the command {subjects.shown!r}",
        "write_file": f"writes {subjects.shown}",
        "edit_file": f"edits {subjects.shown}",
    }.get(tool, "may change things")
    return f"{tool} {what} (permission mode {mode.value})"
