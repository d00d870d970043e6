"""The agents' transcripts on disk: ``transcripts.jsonl`` in the run's log directory.

Every message each model saw and said, in order, one JSON object per line, across all of an
agent's rounds and its presentation: ``agent`` (its configured id), ``round`` (the agent's
round number), ``purpose`` (``round`` or ``present``), ``role``, ``content``, and when present
``tool_calls`` (``id``, ``name``, ``arguments``), ``tool_call_id`` and ``provider_state``.
One agent's transcript is its lines, in file order. The event log keeps what happened
(observations); this file keeps what was said.

One file per run, not one per agent: creating a file costs 60-600 µs of kernel CPU on ext4,
and a run of 1,000 agents spent 0.6-1 s of its 2 s creating their transcript files (a run of
10,000: ~5 s), inside the trio thread (measured against the same runs without transcripts).

Each line is appended in one write as the message joins the transcript, so a crash loses at
most the line being written. A write that fails (a full disk) stops the file for the rest
of the run and is reported once; the run goes on without it.
"""

from __future__ import annotations

import os
import resource
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conclave.actors.llm.protocol import CallPurpose, ChatMessage
from conclave.runtime.codec import json_line

__all__ = ["OPEN_LIMIT", "TRANSCRIPTS", "TranscriptLog"]

TRANSCRIPTS = "transcripts.jsonl"
"""The run's transcript file, in its log directory."""


class TranscriptLog:
    """One agent's lines of the run's transcript file; ``on_failure`` hears its first write
    error."""

    def __init__(self, path: Path, *, agent: str, on_failure: Callable[[str], None]) -> None:
        self.path = path
        self.agent = agent
        self.failure: str | None = None
        self._on_failure = on_failure

    def write(self, round_: int, purpose: CallPurpose, message: ChatMessage) -> None:
        if self.failure is not None:
            return
        data = memoryview(json_line(_line(self.agent, round_, purpose, message)))
        try:
            descriptor = _OPEN_FILES.descriptor(self.path)
            while data:
                data = data[os.write(descriptor, data) :]
        except OSError as exc:
            _OPEN_FILES.forget(self.path)
            self.failure = f"cannot write the transcript {self.path}: {exc.strerror or exc}"
            self._on_failure(self.failure)

    def close(self) -> None:
        """Close the file if it is open (the run has ended: its agents write no more). A
        later write opens it again."""
        _OPEN_FILES.forget(self.path)


class _OpenFiles:
    """The most recently written transcripts' descriptors, kept open between writes.

    Opening a file for each line cost a batch of 3-agent runs 2-3 ms of CPU per run (20
    lines each); keeping every agent's file open would spend a descriptor per agent, and a
    run of 10,000 agents would run out. So at most ``limit`` stay open, the least recently
    written closed first: an agent writes a burst of lines per round, which hit. Each line
    is still one unbuffered ``write``, so a crash loses at most the line being written.
    A run closes its agents' files as it ends (:meth:`TranscriptLog.close`), so the open
    ones are those of live agents.
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._open: OrderedDict[Path, int] = OrderedDict()

    def descriptor(self, path: Path) -> int:
        descriptor = self._open.get(path)
        if descriptor is not None:
            self._open.move_to_end(path)
            return descriptor
        try:
            descriptor = os.open(path, _APPEND, 0o644)
        except FileNotFoundError:
            # One ``mkdir`` per run (the first agent to write), not one per agent.
            path.parent.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(path, _APPEND, 0o644)
        self._open[path] = descriptor
        if len(self._open) > self._limit:
            _, oldest = self._open.popitem(last=False)
            os.close(oldest)
        return descriptor

    def forget(self, path: Path) -> None:
        descriptor = self._open.pop(path, None)
        if descriptor is not None:
            os.close(descriptor)


def _limit() -> int:
    """How many transcripts may stay open: an eighth of the process's descriptors, at most
    1,024. A batch keeps every live agent's file open up to there: with 64 (21 runs of 3
    agents), a batch of 3-agent runs at C = 50 reopened a transcript for 10 of each run's
    21 lines (C = 200: 11), an open and a close each (~0.1-0.15 ms of a run's ~12 ms of
    CPU); now each file is opened once, up to C = 340 runs of 3 agents."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_OPEN
    return max(64, min(MAX_OPEN, soft // 8))


MAX_OPEN = 1_024
"""The most transcripts kept open at once, whatever the descriptor limit."""
OPEN_LIMIT = _limit()
"""How many transcripts this process keeps open at most."""
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
_OPEN_FILES = _OpenFiles(limit=OPEN_LIMIT)


def _line(agent: str, round_: int, purpose: CallPurpose, message: ChatMessage) -> dict[str, Any]:
    line: dict[str, Any] = {
        "agent": agent,
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
