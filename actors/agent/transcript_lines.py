"""The lines of ``transcripts.jsonl`` (format 2): a line per batch of messages, a message
seen before written as a reference to it.

Format 2
    The file's first line is the header ``{"format": 2}``. Every other line is a batch of
    one agent's messages, appended to its transcript together (a round's prompt, the model's
    reply, a tool's result): ``agent``, ``round``, ``purpose`` and ``messages``, a list of
    message objects (``role``, ``content``, and when present ``tool_calls``, ``tool_call_id``
    and ``provider_state``, as in format 1). Two more keys save what is said again:

    * ``n``: a message with nothing but a ``role`` and a ``content`` of
      :data:`SAME_MIN_CHARS` characters or more, and shorter than
      :data:`~actors.agent.transcript_texts.TEXT_MIN_CHARS` (longer ones are written in
      pieces, which repeat already), in a line of such messages only, is numbered,
      counting up from 1 in the file;
    * ``{"same": n}`` in ``messages``: message ``n`` again, role and content.

    Every agent of a run gets the same system prompt in every round, and the same first
    prompt; written in full each time, they were a third of a 2,000-agent run's 7.8 MB of
    transcripts. Long texts are still cut into pieces (:mod:`actors.agent.transcript_texts`,
    whose JSON Pointers now start ``/messages/<i>/``); pieces are put back before messages
    are numbered or looked up.

    A header line anywhere starts a new file's numbering (files appended to one another).

Format 1
    Written before the header existed (main up to fd27407): no header, one line per
    message, the message's keys beside ``agent``, ``round`` and ``purpose``. Read as written.

What it saves
    A 2,000-agent ring run wrote 8 lines and 3.9 kB per agent (7.8 MB); it writes 4 lines
    and 2.4 kB (4.8 MB). Batching left its CPU about the same; what made it cheaper was
    not cutting its round-2 prompts (1.1 kB) into pieces: 36 µs per agent for its 4 lines
    against 85, timed around each line on a slower machine
    (:data:`~actors.agent.transcript_texts.TEXT_MIN_CHARS`).

Reach
    Both sides keep the numbered messages met (written or referred to) in two generations
    of :class:`~runtime.eventlog_texts.Generations` of :data:`GENERATION_MESSAGES` messages
    or :data:`GENERATION_MESSAGE_CHARS` characters, counted the same way, so the writer holds
    a bounded set of strings however long the run: a message met in neither is written again
    in full, with a new number.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from conclave.actors.agent.transcript_texts import (
    PIECES_KEY,
    TEXT_MIN_CHARS,
    PieceError,
    PieceReader,
    PieceWriter,
    decoded_arguments,
    encoded_arguments,
)
from conclave.actors.llm.protocol import CallPurpose, ChatMessage
from conclave.runtime.codec import json_line
from conclave.runtime.eventlog_texts import Generations

__all__ = [
    "FORMAT",
    "GENERATION_MESSAGES",
    "GENERATION_MESSAGE_CHARS",
    "HEADER",
    "SAME_MIN_CHARS",
    "LineReader",
    "LineWriter",
]

FORMAT = 2
"""The transcript format this version writes; readers read it and format 1."""
HEADER = json_line({"format": FORMAT})
SAME_MIN_CHARS = 128
"""Shorter messages are written in full every time: a reference would save little."""
GENERATION_MESSAGES = 1_024
GENERATION_MESSAGE_CHARS = 1024 * 1024


class LineWriter:
    """The writer's side, one per file: a batch of messages as its line."""

    def __init__(self) -> None:
        self.pieces = PieceWriter()
        self._known = Generations(texts=GENERATION_MESSAGES, chars=GENERATION_MESSAGE_CHARS)
        """(role, content) → number of the numbered messages met: a key per number, as the
        reader keeps them, so both sides' generations close at the same message (keyed by
        content alone, a text said in a second role replaced its first number here but not
        in the reader, whose generations then closed sooner and lost numbers still
        referred to)."""
        self._next = 1

    def line(
        self, agent: str, round_: int, purpose: CallPurpose, messages: Sequence[ChatMessage]
    ) -> bytes:
        """The line that writes ``messages``. In a batch of text messages, long texts can
        only be contents: theirs are cut into pieces without walking the line for them
        (walking a round's prompt line and copying it to leave its texts out cost more than
        the rest of the line). A batch with tool calls and the like is walked, if its JSON
        is long enough to hold a long text (a character takes at least a byte)."""
        texts_only = not any(
            m.tool_calls or m.tool_call_id is not None or m.provider_state is not None
            for m in messages
        )
        written: list[dict[str, Any]] = []
        pieces: dict[str, list[Any]] = {}
        for message in messages:
            content = message.content
            if not texts_only:
                written.append(_written(message))
            elif len(content) < SAME_MIN_CHARS:
                written.append({"role": message.role, "content": content})
            elif len(content) < TEXT_MIN_CHARS:
                written.append(self._numbered(message.role, content))
            else:
                pieces[f"/messages/{len(written)}/content"] = self.pieces.written(content)
                written.append({"role": message.role, "content": None})
        line: dict[str, Any] = {
            "agent": agent,
            "round": round_,
            "purpose": purpose.value,
            "messages": written,
        }
        if texts_only:
            if pieces:
                line[PIECES_KEY] = pieces
            return json_line(line)
        encoded = json_line(line)
        if len(encoded) < TEXT_MIN_CHARS:
            return encoded
        pieced = self.pieces.line(line)
        return encoded if pieced is line else json_line(pieced)

    def _numbered(self, role: str, content: str) -> dict[str, Any]:
        """A text message long enough to be said again: a reference if it was."""
        key = (role, content)
        known = self._known.get(key)
        if known is not None:
            self._known.met(key, known, len(content))
            return {"same": known}
        number = self._next
        self._next += 1
        self._known.met(key, number, len(content))
        return {"role": role, "content": content, "n": number}


def _written(message: ChatMessage) -> dict[str, Any]:
    written: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        written["tool_calls"] = [_tool_call(c.id, c.name, c.arguments) for c in message.tool_calls]
    if message.tool_call_id is not None:
        written["tool_call_id"] = message.tool_call_id
    if message.provider_state is not None:
        written["provider_state"] = message.provider_state
    return written


def _tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """A tool call's entry: long arguments decoded when they encode back exactly, so their
    texts are cut into the same pieces as everywhere else (an answer's content)."""
    decoded = decoded_arguments(arguments) if len(arguments) >= TEXT_MIN_CHARS else None
    if decoded is None:
        return {"id": call_id, "name": name, "arguments": arguments}
    value, style = decoded
    return {
        "id": call_id,
        "name": name,
        "arguments": None,
        "arguments_object": value,
        "arguments_style": style.value,
    }


class LineReader:
    """The reader's side: a line of either format as the messages it records, each a dict
    of ``agent``, ``round``, ``purpose`` and the message's keys (format 1's lines)."""

    def __init__(self) -> None:
        self._pieces = PieceReader()
        self._known = Generations(texts=GENERATION_MESSAGES, chars=GENERATION_MESSAGE_CHARS)
        """Number → (role, content) of the numbered messages met."""

    def _start_file(self) -> None:
        self._pieces = PieceReader()
        self._known = Generations(texts=GENERATION_MESSAGES, chars=GENERATION_MESSAGE_CHARS)

    def messages(self, line: object) -> Iterator[dict[str, Any]]:
        """Raises :class:`PieceError` (or ``KeyError``, ``TypeError``) on a malformed line."""
        if not isinstance(line, dict):
            raise PieceError("the line is not a JSON object")
        if "format" in line:
            self._header(line["format"])
            return
        self._pieces.resolve(line)
        listed = line.pop("messages", None)
        if listed is None:  # format 1: the line is the message
            yield _with_arguments(line)
            return
        if not isinstance(listed, list):
            raise PieceError("messages is not a list")
        head = {"agent": line["agent"], "round": line["round"], "purpose": line["purpose"]}
        for message in listed:
            yield {**head, **self._message(message)}

    def _header(self, found: object) -> None:
        if type(found) is not int or not 1 <= found <= FORMAT:
            raise PieceError(
                f"the file is in transcript format {found!r}; this Conclave reads formats "
                f"1-{FORMAT}: read it with the Conclave that wrote it, or a newer one"
            )
        self._start_file()

    def _message(self, message: object) -> dict[str, Any]:
        if not isinstance(message, dict):
            raise PieceError("a message is not a JSON object")
        if "same" in message:
            number = message["same"]
            known: tuple[str, str] | None = self._known.get(number) if type(number) is int else None
            if known is None:
                raise PieceError(f"message {number!r} was not written by an earlier line")
            role, content = known
            self._known.met(number, known, len(content))
            return {"role": role, "content": content}
        number = message.pop("n", None)
        if number is not None:
            content = message["content"]
            if type(number) is not int or not isinstance(content, str):
                raise PieceError(f"message {number!r} is not a numbered text message")
            self._known.met(number, (message["role"], content), len(content))
        return _with_arguments(message)


def _with_arguments(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with its tool calls' decoded arguments encoded back, as sent."""
    for call in message.get("tool_calls", ()):
        if "arguments_object" in call:
            value, style = call.pop("arguments_object"), call.pop("arguments_style")
            call["arguments"] = encoded_arguments(value, style)
    return message
