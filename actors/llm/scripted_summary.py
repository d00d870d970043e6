"""The scripted backend's summary of a conversation (a compaction call): deterministic,
made from the exchanges the request quotes, so compaction runs and is tested with no key.

The request is :func:`actors.session.compaction.summary_request`'s: a system message, the
exchanges as user and assistant messages, and a last user message asking for the summary
(with any focus the person gave after :data:`FOCUS`).
"""

from __future__ import annotations

from collections.abc import Sequence

from conclave.actors.llm.protocol import ChatMessage

__all__ = ["FOCUS", "summary_reply"]

FOCUS = "Focus on: "
"""Starts the line of the summary request that carries ``/compact``'s instructions."""

_SHOWN = 80
"""Characters of each question and answer the summary keeps."""


def summary_reply(messages: Sequence[ChatMessage]) -> ChatMessage:
    """One line per exchange quoted (its question and answer, shortened), and the focus."""
    quoted = list(messages[1:-1])
    lines = [f"Summary of {len(quoted) // 2} earlier exchange(s):"]
    for asked, answered in zip(quoted[::2], quoted[1::2], strict=False):
        lines.append(f"- asked: {_short(asked.content)}; answered: {_short(answered.content)}")
    request = messages[-1].content if messages else ""
    focus = next((ln for ln in request.splitlines() if ln.startswith(FOCUS)), None)
    if focus is not None:
        lines.append(f"({focus.strip()})")
    return ChatMessage(role="assistant", content="\n".join(lines))


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _SHOWN else flat[: _SHOWN - 1] + "…"
