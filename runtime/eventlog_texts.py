"""Long texts in the event log, written once: later lines refer to them by number.

A run passes the same long text around many times: an answer is submitted, accepted,
recorded, sent to the bus, shown to every voter in a snapshot, presented, returned; the task
goes to every agent. Written in full each time, a 1 MB answer made a 12 MB log. So every
string of at least :data:`TEXT_MIN_CHARS` characters (a field's value anywhere in a line,
however deep) is written in full once, and numbered; a later line that holds the same text
holds ``null`` in its place instead, and says which text goes there.

Line format
    A line that holds such texts has a ``texts`` key: an object whose keys are JSON
    Pointers (RFC 6901) into the line as written (``/envelope/payload/answers/0/content``)
    and whose values are text numbers. Where the pointer finds a string, the line defines
    that number (numbers count up from 1 in the order texts are first written); where it
    finds ``null``, the number's text goes there. Entries are in the order the writer met
    them, which the reader follows.

Reach
    Both sides keep the texts met (defined or referred to) in two generations; a generation
    closes after :data:`GENERATION_TEXTS` texts or :data:`GENERATION_CHARS` characters,
    counted the same way on both sides, so memory stays bounded however long the run. A
    text met in neither of the last two generations is written in full again (with a new
    number). Lines of kinds a reader does not know still carry texts: it reads them too.
"""

from __future__ import annotations

import hashlib
from typing import Any

from conclave.runtime import json_paths
from conclave.runtime.codec import json_line

__all__ = [
    "GENERATION_CHARS",
    "GENERATION_TEXTS",
    "TEXTS_KEY",
    "TEXT_MIN_CHARS",
    "Generations",
    "TextError",
    "TextReader",
    "TextWriter",
]

TEXT_MIN_CHARS = 1024
"""Shorter strings are written in place every time: a reference would save little."""
TEXTS_KEY = "texts"
_TEXTS_NAME = json_line(TEXTS_KEY)[:-1]
GENERATION_TEXTS = 16_384
GENERATION_CHARS = 32 * 1024 * 1024
"""A generation of remembered texts closes at this many texts or characters, whichever
comes first: a reader holds at most two generations of texts."""


class TextError(ValueError):
    """A line's ``texts`` is malformed or refers to a text no earlier line defined."""


class Generations:
    """Texts met recently, in two generations, closed as the module docstring says (also
    the reach of the transcript file's pieces, :mod:`actors.agent.transcript_texts`, and of
    its repeated messages, with smaller generations: :mod:`actors.agent.transcript_lines`)."""

    def __init__(self, *, texts: int | None = None, chars: int | None = None) -> None:
        self.recent: dict[Any, Any] = {}
        self.older: dict[Any, Any] = {}
        self._chars = 0
        # Read when made, not when defined: the module's sizes are the event log's setting.
        self._max_texts = GENERATION_TEXTS if texts is None else texts
        self._max_chars = GENERATION_CHARS if chars is None else chars

    def get(self, key: Any) -> Any:
        found = self.recent.get(key)
        return self.older.get(key) if found is None else found

    def met(self, key: Any, value: Any, chars: int) -> None:
        self.recent[key] = value
        self._chars += chars
        if len(self.recent) >= self._max_texts or self._chars >= self._max_chars:
            self.older, self.recent, self._chars = self.recent, {}, 0


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class TextWriter:
    """The writer's side: numbers texts and replaces the ones already written."""

    def __init__(self) -> None:
        self._known = Generations()
        """Digest of a text → its number."""
        self._next = 1

    def line(self, data: dict[str, Any], line: bytes) -> bytes:
        """The line to write for ``data`` (whose JSON line is ``line``): with every long
        text already written replaced by ``null``, and a ``texts`` entry for every long
        text, defined or referred to; ``line`` itself if it holds none. ``data`` is not
        changed: containers on the way to a replaced text are copied."""
        if len(line) < TEXT_MIN_CHARS:  # a shorter line holds no long text
            return line
        found = json_paths.long_strings(data, TEXT_MIN_CHARS)
        if not found:
            return line
        texts: dict[str, int] = {}
        written: list[tuple[Any, ...]] = []
        for path, text in found:
            digest = _digest(text)
            number = self._known.get(digest)
            if number is None:
                number = self._next
                self._next += 1
            else:
                written.append(path)
            texts[json_paths.pointer(path)] = number
            self._known.met(digest, number, len(text))
        if not written:
            # Every text is new: the line as it is, with ``texts`` added at its end.
            return b"%s,%s:%s}\n" % (line[:-2], _TEXTS_NAME, json_line(texts)[:-1])
        interned = json_paths.without(data, written)
        interned[TEXTS_KEY] = texts
        return json_line(interned)


class TextReader:
    """The reader's side: remembers the texts lines define and puts them where lines
    refer to them."""

    def __init__(self) -> None:
        self._texts = Generations()
        """Number → text."""

    def resolve(self, data: dict[str, Any], texts: object) -> None:
        """Put the texts ``texts`` (a line's ``texts`` value) names into ``data``, in
        place, remembering those it defines. Raises :class:`TextError`."""
        if not isinstance(texts, dict):
            raise TextError(f"{TEXTS_KEY} is {type(texts).__name__}, expected an object")
        for pointer, number in texts.items():
            if type(number) is not int:
                raise TextError(f"{TEXTS_KEY}[{pointer!r}] is {number!r}, expected a number")
            try:
                container, key = json_paths.locate(data, pointer)
            except json_paths.PointerError as exc:
                raise TextError(str(exc)) from None
            value = container[key]
            if isinstance(value, str):
                text = value
            elif value is None:
                found = self._texts.get(number)
                if found is None:
                    raise TextError(
                        f"text {number} at {pointer} was not written by an earlier line "
                        "within reach"
                    )
                text = found
                container[key] = text
            else:
                raise TextError(f"{pointer} holds {type(value).__name__}, not a text")
            self._texts.met(number, text, len(text))
