"""A command's output, capped: the first bytes are kept, the rest only counted."""

from __future__ import annotations

__all__ = ["CappedOutput"]


class CappedOutput:
    """Bytes as a command wrote them, up to ``limit``; past it, ``truncated`` counts what was
    dropped, so the model is told how much it did not see."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._kept = bytearray()
        self.truncated = 0

    def add(self, chunk: bytes | bytearray) -> None:
        room = self._limit - len(self._kept)
        if room > 0:
            self._kept += chunk[:room]
        self.truncated += max(0, len(chunk) - max(room, 0))

    def text(self) -> str:
        """The kept bytes as text; a byte that is not UTF-8 (or a character cut at the cap)
        becomes U+FFFD rather than failing the call."""
        return self._kept.decode("utf-8", errors="replace")
