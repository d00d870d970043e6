"""An agent's transcripts on disk: ``agents/<agent id>.jsonl`` in the run's log directory.

Every message the model saw and said, in order, one JSON object per line, across all of the
agent's rounds and its presentation: ``round`` (the agent's round number), ``purpose``
(``round`` or ``present``), ``role``, ``content``, and when present ``tool_calls``
(``id``, ``name``, ``arguments``), ``tool_call_id`` and ``provider_state``. The event log
keeps what happened (observations); this file keeps what was said.

Each line is appended in one write as the message joins the transcript, so a crash loses at
most the line being written. A write that fails (a full disk) stops the file for the rest
of the run and is reported once; the run goes on without it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from actors.llm.protocol import CallPurpose, ChatMessage
from runtime.codec import json_line

__all__ = ["TranscriptLog"]


class TranscriptLog:
    """One agent's transcript file; ``on_failure`` hears the first write error."""

    def __init__(self, path: Path, *, on_failure: Callable[[str], None]) -> None:
        self.path = path
        self.failure: str | None = None
        self._on_failure = on_failure
        self._directory_made = False

    def write(self, round_: int, purpose: CallPurpose, message: ChatMessage) -> None:
        if self.failure is not None:
            return
        data = memoryview(json_line(_line(round_, purpose, message)))
        try:
            if not self._directory_made:
                # Once per agent, not once per message: the directory does not go away.
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._directory_made = True
            # Unbuffered: a line goes to the OS as it is, without a copy in a buffer.
            with self.path.open("ab", buffering=0) as file:
                while data:
                    data = data[file.write(data) :]
        except OSError as exc:
            self.failure = f"cannot write the transcript {self.path}: {exc.strerror or exc}"
            self._on_failure(self.failure)


def _line(round_: int, purpose: CallPurpose, message: ChatMessage) -> dict[str, Any]:
    line: dict[str, Any] = {
        "round": round_,
        "purpose": purpose.value,
        "role": message.role,
        "content": message.content,
    }
    if message.tool_calls:
        line["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        line["tool_call_id"] = message.tool_call_id
    if message.provider_state is not None:
        line["provider_state"] = message.provider_state
    return line
