"""``@file`` in a prompt: the file's text goes with the task, as in Claude Code.

A word that starts with ``@`` (at the start of the line or after a space, so an e-mail
address is left alone) names a file, relative to the directory the REPL started in (``~``
is the home directory). Each file named is read and appended to the task in a fence that
its own text cannot close. A file that is missing, a directory, too large or not text is a
clear error and nothing is sent: the line stays in the input to be corrected.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

__all__ = [
    "MAX_ATTACHMENT_BYTES",
    "AttachError",
    "Attached",
    "attach",
    "longest_backtick_run",
    "mentioned",
]

MAX_ATTACHMENT_BYTES = 256 * 1024
"""The largest file ``@`` attaches: past it, a model's context is better spent otherwise,
and the agents can read a bigger file with their tools (``--context``)."""

_MENTION = re.compile(r"(?:^|(?<=\s))@(\S+)")


class AttachError(Exception):
    """A file named with ``@`` cannot be attached; the message says which and why."""


@attrs.frozen(kw_only=True)
class Attached:
    task: str
    """The task as sent: what was typed, then each file's text."""
    files: tuple[tuple[str, int], ...]
    """Each file attached, as typed, with its size in bytes."""


def mentioned(text: str) -> list[str]:
    """The files ``text`` names with ``@``, in order, each once."""
    return list(dict.fromkeys(_MENTION.findall(text)))


def attach(text: str, cwd: Path) -> Attached:
    """``text`` with the files it names appended; raises :class:`AttachError` for the first
    that cannot be attached."""
    names = mentioned(text)
    parts = [text]
    files: list[tuple[str, int]] = []
    for name in names:
        content = _read(name, cwd)
        fence = "`" * max(3, longest_backtick_run(content) + 1)
        parts.append(f"Attached file {name}:\n{fence}\n{content.rstrip(chr(10))}\n{fence}")
        files.append((name, len(content.encode("utf-8"))))
    return Attached(task="\n\n".join(parts), files=tuple(files))


def _read(name: str, cwd: Path) -> str:
    path = cwd / Path(name).expanduser()
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise AttachError(
            f"@{name}: no such file (from {cwd}); nothing was sent: correct the path "
            "(Tab completes it) and press Enter"
        ) from None
    except OSError as exc:
        raise AttachError(f"@{name}: cannot read it ({exc.strerror or exc})") from None
    if path.is_dir():
        raise AttachError(f"@{name}: is a directory; name a file (Tab completes paths)")
    if size > MAX_ATTACHMENT_BYTES:
        raise AttachError(
            f"@{name}: too large to attach ({size:,} bytes; at most "
            f"{MAX_ATTACHMENT_BYTES:,}); give the agents the file with --context instead"
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise AttachError(f"@{name}: cannot read it ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise AttachError(f"@{name}: not a text file (not UTF-8); attach text files only") from None


def longest_backtick_run(text: str) -> int:
    """The longest run of backticks in ``text``: a fence one longer cannot be closed by it."""
    return max((len(run) for run in re.findall(r"`+", text)), default=0)
