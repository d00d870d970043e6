"""Text helpers the tools share: capping what the model sees, and short diffs."""

from __future__ import annotations

import difflib

__all__ = ["cap", "short_diff"]


def cap(text: str, limit: int, *, dropped: int = 0) -> tuple[str, int]:
    """``text`` cut to ``limit`` UTF-8 bytes, and N, the bytes cut here; when anything is
    missing it ends in ``[truncated: M bytes]``, where M counts both what is cut here and
    ``dropped``, what was lost before ``text`` was made (a sandbox keeps the first 1 MiB of a
    command's output and only counts the rest): the model is told the true count."""
    cut = 0
    if len(text) > limit // 4:  # a str of n chars is at most 4n bytes: no need to encode
        data = text.encode()
        if len(data) > limit:
            text = data[:limit].decode(errors="ignore")
            cut = len(data) - len(text.encode())
    if cut + dropped:
        text = f"{text}\n[truncated: {cut + dropped} bytes]"
    return text, cut


def short_diff(before: str, after: str, *, path: str, max_lines: int, created: bool = False) -> str:
    """A unified diff of ``before`` → ``after`` with 2 lines of context, at most
    ``max_lines`` lines (the rest is counted, not shown). A ``created`` file comes from
    ``/dev/null``, as git and patch write a new file's diff."""
    lines = list(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            # an absolute path: a/tmp/x, not a//tmp/x
            fromfile="/dev/null" if created else f"a/{path.lstrip('/')}",
            tofile=f"b/{path.lstrip('/')}",
            n=2,
        )
    )
    text = "".join(_ended(line) for line in lines[:max_lines])
    if len(lines) > max_lines:
        text += f"[diff truncated: {len(lines) - max_lines} more lines]\n"
    return text


def _ended(line: str) -> str:
    return line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
