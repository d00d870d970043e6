"""The one converter: messages, envelopes and events to JSON-ready dicts and back.

Payloads are a tagged union over every registered :class:`Message` subclass, tagged by
``kind``. The union is open (classes register at import), so the hooks dispatch on the tag
at call time instead of freezing a ``Union[...]`` when the converter is built.
"""

from __future__ import annotations

import json
import math
from typing import Any, TypeVar

import cattrs
import orjson
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from conclave.runtime.codec_flat import flat_encoder
from conclave.runtime.messages import Envelope, Message, message_class

__all__ = [
    "DecodeError",
    "converter",
    "decode",
    "dumps",
    "dumps_bytes",
    "encode",
    "encode_envelope",
    "encode_float",
    "encode_without",
    "json_line",
    "loads",
]

T = TypeVar("T")

converter = cattrs.Converter(forbid_extra_keys=True)


class DecodeError(ValueError):
    """Raised when data does not describe a registered message; names the problem."""


def _is_message_type(cls: Any) -> bool:
    return isinstance(cls, type) and issubclass(cls, Message)


_unstructure_fns: dict[type[Message], Any] = {}
_structure_fns: dict[type[Message], Any] = {}


def _unstructure_message(obj: Message) -> dict[str, Any]:
    cls = type(obj)
    fn = _unstructure_fns.get(cls)
    if fn is None:
        fn = _unstructure_fns[cls] = flat_encoder(cls, cls.kind) or _tagged(cls)
    data: dict[str, Any] = fn(obj)
    return data


def _tagged(cls: type[Message]) -> Any:
    """cattrs' function for ``cls``, with the ``kind`` tag first."""
    fn = make_dict_unstructure_fn(cls, converter)
    kind = cls.kind
    return lambda obj: {"kind": kind, **fn(obj)}


def _structure_message(data: Any, declared: type[Message]) -> Message:
    if not isinstance(data, dict) or "kind" not in data:
        raise DecodeError(
            f"expected an object with a 'kind' tag for {declared.__name__}, got {data!r}"
        )
    try:
        cls = message_class(data["kind"])
    except KeyError as exc:
        raise DecodeError(str(exc.args[0])) from None
    if not issubclass(cls, declared):
        raise DecodeError(f"kind {data['kind']!r} is not a {declared.__name__}")
    fn = _structure_fns.get(cls)
    if fn is None:
        fn = _structure_fns[cls] = make_dict_structure_fn(
            cls, converter, _cattrs_forbid_extra_keys=True
        )
    body = {k: v for k, v in data.items() if k != "kind"}
    result: Message = fn(body, cls)
    return result


def encode_float(value: float) -> float | str:
    """JSON has no infinity or NaN (orjson writes them as null): carry them as "inf", "-inf"
    or "nan", which cattrs' ``float()`` turns back into the same float."""
    return value if math.isfinite(value) else repr(value)


def encode_envelope(envelope: Envelope) -> dict[str, Any]:
    """What cattrs' generated function returns for an envelope (a spec holds them equal,
    field by field), written out: every message a run sends is logged with its envelope, and
    cattrs reaches the optional sender and correlation id through its union dispatch, which
    made this an eighth slower."""
    sender, recipient, timestamp = envelope.sender, envelope.recipient, envelope.timestamp
    return {
        "id": envelope.id,
        "sender": None if sender is None else {"kind": sender.kind, "key": sender.key},
        "recipient": {"kind": recipient.kind, "key": recipient.key},
        "payload": _unstructure_message(envelope.payload),
        "correlation_id": envelope.correlation_id,
        "timestamp": timestamp if math.isfinite(timestamp) else repr(timestamp),
        "is_reply": envelope.is_reply,
    }


converter.register_unstructure_hook(float, encode_float)
converter.register_unstructure_hook_func(_is_message_type, _unstructure_message)
converter.register_structure_hook_func(_is_message_type, _structure_message)
converter.register_unstructure_hook(Envelope, encode_envelope)

_structure_envelope_dict = make_dict_structure_fn(
    Envelope, converter, _cattrs_forbid_extra_keys=True
)


def _structure_envelope(data: Any, _: type[Envelope]) -> Envelope:
    """An :class:`Envelope` may stand where its JSON would: the event log reader puts back
    the envelope an ``envelope_ref`` names, already decoded, and decodes the rest around it."""
    if isinstance(data, Envelope):
        return data
    envelope: Envelope = _structure_envelope_dict(data, Envelope)
    return envelope


converter.register_structure_hook(Envelope, _structure_envelope)


def encode(obj: Any) -> Any:
    """Unstructure any registered message, envelope or event to JSON-ready data."""
    if isinstance(obj, Message):
        return _unstructure_message(obj)
    return converter.unstructure(obj)


_unstructure_without_fns: dict[tuple[type[Message], str], Any] = {}


def encode_without(obj: Message, name: str) -> dict[str, Any]:
    """``encode(obj)`` less its field ``name``: for a writer that puts a reference there
    (the event log writes ``envelope_ref`` instead of an envelope it has written before).
    Cheaper than encoding everything and deleting the field: the field is never encoded."""
    cls = type(obj)
    fn = _unstructure_without_fns.get((cls, name))
    if fn is None:
        omit: dict[str, Any] = {name: override(omit=True)}
        fn = make_dict_unstructure_fn(cls, converter, **omit)
        _unstructure_without_fns[cls, name] = fn
    data: dict[str, Any] = fn(obj)
    return {"kind": cls.kind, **data}


def decode(data: Any, cls: type[T]) -> T:
    """Structure ``data`` into ``cls``; failures raise :class:`DecodeError` with the reason."""
    try:
        return converter.structure(data, cls)
    except DecodeError:
        raise
    except Exception as exc:
        raise DecodeError(_describe(exc)) from exc


_FALLBACK = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def dumps_bytes(obj: Any) -> bytes:
    """Compact UTF-8 JSON of ``obj``.

    orjson, because JSON encoding was the largest single cost of a run with an event log
    (the stdlib encoder took ~8 µs per event here, orjson ~0.5 µs). orjson refuses strings
    that are not valid UTF-8 (lone surrogates); those go through the stdlib encoder and are
    written as their JSON escapes, which read back as the same string.
    """
    data = encode(obj)
    try:
        return orjson.dumps(data)
    except orjson.JSONEncodeError:
        return _FALLBACK.encode(data).encode("utf-8", "backslashreplace")


def json_line(data: Any) -> bytes:
    """Already-encoded ``data`` as one line of compact UTF-8 JSON ending in ``\\n``, with
    :func:`dumps_bytes`'s fallback; orjson appends the newline without copying the line."""
    try:
        return orjson.dumps(data, option=orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError:
        return _FALLBACK.encode(data).encode("utf-8", "backslashreplace") + b"\n"


def dumps(obj: Any) -> str:
    return dumps_bytes(obj).decode("utf-8")


def loads(text: str, cls: type[T]) -> T:
    return decode(json.loads(text), cls)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, cattrs.BaseValidationError):
        notes = cattrs.transform_error(exc)
        return "; ".join(notes)
    return f"{type(exc).__name__}: {exc}"
