"""Long texts in ``transcripts.jsonl``, written once: later lines refer to their pieces.

Every agent is shown every answer in every round's prompt, and the presenter all of them
again: written in full each time, a 1 MB answer in a 3-agent run made 6.2 MB of transcripts.
An answer is quoted inside a longer message (a prompt, between delimiters), so a text is not
matched whole, as the event log matches its texts (:mod:`runtime.eventlog_texts`), but in
pieces: the same text gets the same pieces wherever it is quoted, and each piece is written
once.

Line format
    A string of at least :data:`TEXT_MIN_CHARS` characters anywhere in a line is written as
    ``null``, and the line's ``pieces`` key maps its JSON Pointer (RFC 6901, as in the event
    log) to a list of its pieces, in order; the text is their concatenation. A piece is:

    * ``"text"``: written here (shorter than :data:`PIECE_MIN_CHARS`: not worth a number);
    * ``[n, "text"]``: written here, and numbered ``n`` (a line that numbers a piece always
      (re)defines that number);
    * ``n``: piece ``n``, written by an earlier line.

    A tool call's long ``arguments`` that are a JSON object the writer would encode the same
    way (compact, or with spaces) are written decoded, as ``arguments_object`` with
    ``arguments_style`` (``compact``, ``spaced``, ``spaced_ascii``) and ``arguments``
    ``null``: the answer a ``new_answer`` call carries is then the same text, in the same
    pieces, as the answer quoted in the prompts. Readers encode it back, byte for byte.

Pieces
    A piece ends at the end of a line chosen by the content: a line whose hash ends in five
    zero bits, once the piece holds :data:`PIECE_MIN_CHARS`, or past :data:`PIECE_MAX_CHARS`;
    so after its first piece a quoted text is cut where it is cut anywhere else (a line
    longer than that is a piece of its own). The hash is CRC-32, not ``hash()``: a file's
    size must not depend on the process's hash seed.

Reach
    Both sides keep the pieces met (defined or referred to) in two generations of
    :class:`~runtime.eventlog_texts.Generations`, counted the same way, so memory stays
    bounded however long the run: a piece met in neither is written again, with a new number.
"""

from __future__ import annotations

import enum
import hashlib
import json
import zlib
from collections.abc import Callable
from typing import Any

import orjson

from conclave.runtime import json_paths
from conclave.runtime.eventlog_texts import Generations

__all__ = [
    "PIECES_KEY",
    "PIECE_MAX_CHARS",
    "PIECE_MIN_CHARS",
    "TEXT_MIN_CHARS",
    "ArgumentsStyle",
    "PieceError",
    "PieceReader",
    "PieceWriter",
    "decoded_arguments",
    "encoded_arguments",
]

TEXT_MIN_CHARS = 2048
"""Shorter strings are written in place every time. A piece ends at a line past
:data:`PIECE_MIN_CHARS` with odds of one in 32, so a shorter text is mostly one piece, its
first, which holds its start: it dedupes only if it recurs whole, and a round's prompt (the
answers between the round's own words) never does. Cut from 1,024 characters up, a
2,000-agent ring run's prompts (1.1 kB) made its transcripts 1.6 % larger and cost each
agent 30-50 µs of its ~2 ms (issue 24); 3- and 5-agent runs all-to-all wrote 3-12 % more.
Longer texts (an answer of 3 kB quoted in every prompt) are cut as before."""
PIECE_MIN_CHARS = 512
PIECE_MAX_CHARS = 64 * 1024
PIECES_KEY = "pieces"
_CUT_MASK = 0x1F
"""A line whose hash has these bits zero ends a piece: one line in 32, on average (pieces
of 2-4 kB of prose: a reference, a few bytes, costs under 0.5 % of what it replaces)."""


class PieceError(ValueError):
    """A line's ``pieces`` is malformed or refers to a piece no earlier line defined."""


class ArgumentsStyle(enum.Enum):
    """How a tool call's JSON arguments were encoded, so that decoding them loses nothing."""

    COMPACT = "compact"
    """``{"a":"b"}``, non-ASCII as is (OpenAI's models, Conclave's scripted backend)."""
    SPACED = "spaced"
    """``{"a": "b"}``, non-ASCII as is."""
    SPACED_ASCII = "spaced_ascii"
    """``{"a": "b"}``, non-ASCII escaped (Python's ``json.dumps``)."""


_ENCODERS: dict[ArgumentsStyle, Callable[[Any], str]] = {
    ArgumentsStyle.COMPACT: lambda value: orjson.dumps(value).decode(),
    ArgumentsStyle.SPACED: lambda value: json.dumps(value, ensure_ascii=False),
    ArgumentsStyle.SPACED_ASCII: json.dumps,
}


def decoded_arguments(arguments: str) -> tuple[dict[str, Any], ArgumentsStyle] | None:
    """``arguments`` as a JSON object and the style that encodes it back exactly, or
    ``None`` if no style does (or it is no JSON object)."""
    try:
        value = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    for style, encode in _ENCODERS.items():
        try:
            if encode(value) == arguments:
                return value, style
        except (TypeError, ValueError):  # orjson refuses integers past 64 bits
            continue
    return None


def encoded_arguments(value: object, style: object) -> str:
    """The arguments string :func:`decoded_arguments` took apart. Raises :class:`PieceError`."""
    try:
        return _ENCODERS[ArgumentsStyle(style)](value)
    except (ValueError, TypeError) as exc:
        raise PieceError(f"arguments_style {style!r} cannot encode the arguments: {exc}") from None


def _pieces(text: str) -> list[str]:
    """``text`` cut at content-chosen line ends (see the module docstring)."""
    pieces: list[str] = []
    start = end = 0
    for line in text.split("\n"):
        end += len(line) + 1
        size = end - start
        if size >= PIECE_MAX_CHARS or (
            size >= PIECE_MIN_CHARS
            and not zlib.crc32(line.encode("utf-8", "surrogatepass")) & _CUT_MASK
        ):
            pieces.append(text[start:end])
            start = end
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class PieceWriter:
    """The writer's side, one per file: cuts long texts into pieces and numbers them."""

    def __init__(self) -> None:
        self._known = Generations()
        """Digest of a piece → its number."""
        self._next = 1

    def line(self, data: dict[str, Any]) -> dict[str, Any]:
        """``data`` with every long text in pieces (a new dict; ``data`` is not changed),
        or ``data`` itself if it holds none."""
        found = json_paths.long_strings(data, TEXT_MIN_CHARS)
        if not found:
            return data
        line = json_paths.without(data, [path for path, _ in found])
        line[PIECES_KEY] = {json_paths.pointer(path): self.written(text) for path, text in found}
        return line

    def written(self, text: str) -> list[Any]:
        """``text`` as its list of pieces (the caller puts ``null`` where it goes)."""
        written: list[Any] = []
        for piece in _pieces(text):
            if len(piece) < PIECE_MIN_CHARS:
                if written and isinstance(written[-1], str):
                    written[-1] += piece
                else:
                    written.append(piece)
                continue
            digest = _digest(piece)
            number = self._known.get(digest)
            if number is None:
                number = self._next
                self._next += 1
                written.append([number, piece])
            else:
                written.append(number)
            self._known.met(digest, number, len(piece))
        return written


class PieceReader:
    """The reader's side: puts the texts a line's ``pieces`` names into it."""

    def __init__(self) -> None:
        self._pieces = Generations()
        """Number → piece."""

    def resolve(self, data: dict[str, Any]) -> None:
        """Replace ``data``'s ``pieces`` key (if any) by the texts it names, in place.
        Raises :class:`PieceError`."""
        pieces = data.pop(PIECES_KEY, None)
        if pieces is None:
            return
        if not isinstance(pieces, dict):
            raise PieceError(f"{PIECES_KEY} is {type(pieces).__name__}, expected an object")
        for pointer, listed in pieces.items():
            if not isinstance(listed, list):
                raise PieceError(f"{PIECES_KEY}[{pointer!r}] is not a list of pieces")
            try:
                container, key = json_paths.locate(data, pointer)
            except json_paths.PointerError as exc:
                raise PieceError(str(exc)) from None
            if container[key] is not None:
                raise PieceError(f"{pointer} holds a value, not null, where its pieces go")
            container[key] = "".join(self._piece(pointer, item) for item in listed)

    def _piece(self, pointer: str, item: object) -> str:
        if isinstance(item, str):
            return item
        if type(item) is int:
            found: str | None = self._pieces.get(item)
            if found is None:
                raise PieceError(f"piece {item} at {pointer} was not written by an earlier line")
            self._pieces.met(item, found, len(found))
            return found
        if (
            isinstance(item, list)
            and len(item) == 2
            and type(item[0]) is int
            and isinstance(item[1], str)
        ):
            number, text = item[0], str(item[1])
            self._pieces.met(number, text, len(text))
            return text
        raise PieceError(f"{pointer}: {item!r} is not a piece (text, [number, text] or number)")
