"""The websocket protocol of ``conclave serve``: typed client and server messages.

Every frame is UTF-8 text holding one or more lines of JSON (JSON Lines: a line never holds a
raw line break, see :func:`ui.progress.json_line`), each a JSON object whose first
field is ``type``. A client sends one message per frame; the server may put several lines in
one frame when a run produces events faster than it flushes (docs/serve.md).

The messages are a tagged union on ``type``, as :mod:`runtime.codec` tags messages by
``kind``: a registry maps each tag to a frozen attrs class, and a copy of the project's
converter structures the fields. The copy is strict about JSON's primitive types (the
project's converter would turn ``"false"`` into ``True`` and ``5`` into ``"5"``): a wire
message with a wrong type is refused naming the field, never coerced.

A frame is hostile until decoded: :func:`decode_client` raises nothing but
:class:`ProtocolError`, whatever the bytes (the fuzz specs in ``tests/serve`` hold it to
that). Its decoder refuses nesting past :data:`MAX_DECODER_DEPTH` without recursing in
Python, and a field holding an array or an object is refused before anything walks it.

Lines about a run's events are not declared here: they are the stream-json schema
(docs/stream-json.md), written by :class:`ui.progress.StreamJson`. Server messages
use types no event uses, so a client tells them apart by ``type`` alone.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import attrs
import cattrs
import orjson
from cattrs.gen import make_dict_structure_fn

from conclave.actors.human.gate import OverrideRequest
from conclave.config.limits import MAX_TASK_BYTES, MAX_TIMEOUT_S
from conclave.config.modes import AgentMode, CollaborationMode
from conclave.runtime.codec import converter
from conclave.ui.progress import json_line

__all__ = [
    "MAX_DECODER_DEPTH",
    "PROTOCOL_VERSION",
    "Accepted",
    "Ack",
    "Answer",
    "Approval",
    "ApprovalDecision",
    "ApprovalRequested",
    "Approve",
    "Auth",
    "Cancel",
    "ClientMessage",
    "CloseCode",
    "Continue",
    "Correct",
    "ErrorCode",
    "ErrorFrame",
    "Override",
    "OverrideWindow",
    "ProtocolError",
    "ServerMessage",
    "Snapshot",
    "StartRun",
    "Subscribe",
    "Unsubscribe",
    "Verdict",
    "Welcome",
    "client_types",
    "decode_client",
    "encode_client",
    "encode_server",
    "encode_snapshot",
    "with_request_id",
]

PROTOCOL_VERSION = 1

MAX_DECODER_DEPTH = 1024
"""The deepest nesting the frame decoder (orjson) reads: deeper is an error it raises, never
a recursion in Python. A client message itself nests nothing: it is one object of scalars."""


class ErrorCode(enum.Enum):
    """What an ``error`` frame is about: a closed set, documented in docs/serve.md."""

    UNAUTHORIZED = "unauthorized"
    """No token, or the wrong one; the connection closes (:attr:`CloseCode.UNAUTHORIZED`)."""
    BAD_FRAME = "bad_frame"
    """The frame is not UTF-8 JSON text holding one object."""
    UNKNOWN_TYPE = "unknown_type"
    """Its ``type`` is missing or names no client message."""
    BAD_MESSAGE = "bad_message"
    """A field is missing, unknown, of the wrong type, or out of range."""
    UNKNOWN_RUN = "unknown_run"
    """No run of this server has that ``run_id`` (or it was forgotten: the server keeps the
    latest finished runs only)."""
    BUSY = "busy"
    """The server already runs as many runs as ``--max-runs`` allows."""
    RUN_NOT_STARTED = "run_not_started"
    """The run could not start (its options or its log directory were refused)."""
    ALREADY_SUBSCRIBED = "already_subscribed"
    NOT_SUBSCRIBED = "not_subscribed"
    FELL_BEHIND = "fell_behind"
    """The client read too slowly; the connection closes (:attr:`CloseCode.FELL_BEHIND`)."""
    SHUTTING_DOWN = "shutting_down"
    """The server is stopping; it starts no more runs."""


class CloseCode(enum.IntEnum):
    """Websocket close codes the server uses besides 1000 and 1001."""

    INTERNAL_ERROR = 1011
    """Something failed inside the server while serving this connection (a bug): this
    connection ends, the server and every run go on, and the server logs a line."""
    UNAUTHORIZED = 4401
    FELL_BEHIND = 4413


class ProtocolError(Exception):
    """A client message the server refuses; becomes an ``error`` frame."""

    def __init__(self, code: ErrorCode, message: str, *, request_id: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id


# ------------------------------------------------------------------------------ validators


def _task(_inst: object, _attr: attrs.Attribute[str], value: str) -> None:
    if not value.strip():
        raise ValueError("task is empty; send the task to run as a non-empty string")
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > MAX_TASK_BYTES:
        raise ValueError(f"task is {size:,} bytes; the limit is {MAX_TASK_BYTES:,}")


def _seconds(_inst: object, attr: attrs.Attribute[Any], value: float | None) -> None:
    if value is None:
        return
    if not math.isfinite(value) or not 0 < value <= MAX_TIMEOUT_S:
        raise ValueError(
            f"{attr.name} must be a number of seconds > 0 and <= {MAX_TIMEOUT_S:.0f}, "
            f"or null; got {value!r}"
        )


def _name(_inst: object, attr: attrs.Attribute[str], value: str) -> None:
    if not value.strip():
        raise ValueError(f"{attr.name} is empty")


def _answer_text(_inst: object, attr: attrs.Attribute[str], value: str) -> None:
    if not value.strip():
        raise ValueError("value is empty; send an option's value or the answer in free text")
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > MAX_TASK_BYTES:
        raise ValueError(f"value is {size:,} bytes; the limit is {MAX_TASK_BYTES:,}")


def _feedback_text(_inst: object, attr: attrs.Attribute[str], value: str) -> None:
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > MAX_TASK_BYTES:
        raise ValueError(f"feedback is {size:,} bytes; the limit is {MAX_TASK_BYTES:,}")


def _correction_text(_inst: object, attr: attrs.Attribute[str], value: str) -> None:
    if not value.strip():
        raise ValueError("text is empty; say what the agent should change")
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > MAX_TASK_BYTES:
        raise ValueError(f"text is {size:,} bytes; the limit is {MAX_TASK_BYTES:,}")


# ------------------------------------------------------------------------------ client


@attrs.frozen(kw_only=True)
class _Client:
    type: ClassVar[str]
    request_id: str | None = None
    """Echoed in the replies to this message (``run_accepted``, ``verdict``, ``ack``,
    ``error``), so a client can pair them."""


@attrs.frozen(kw_only=True)
class Auth(_Client):
    """The token, for clients that can set neither a header nor a subprotocol: must be the
    first message of a connection that presented no token."""

    type: ClassVar[str] = "auth"
    token: str


@attrs.frozen(kw_only=True)
class StartRun(_Client):
    """Start a run of the server's config on ``task``; the options are ``conclave run``'s."""

    type: ClassVar[str] = "start_run"
    task: str = attrs.field(validator=_task)
    mode: CollaborationMode = CollaborationMode.DEFAULT
    agent_mode: AgentMode = AgentMode.MULTI
    agent: str | None = None
    """In single mode, which agent runs (default: the first)."""
    refinement: bool = True
    timeout: float | None = attrs.field(default=None, validator=_seconds)
    """Whole-run timeout in seconds (default: the config's ``run_timeout``)."""
    override_window: bool = False
    """Pause after the vote until a client sends ``override`` or ``continue`` (or
    ``decision_timeout`` passes: the vote stands). The run's timer stops meanwhile."""
    decision_timeout: float | None = attrs.field(default=300.0, validator=_seconds)
    """With ``override_window`` or ``questions``: seconds to wait for a decision or an
    answer; ``null`` waits until one comes or the run is cancelled."""
    questions: bool = False
    """Let the agents ask (a single agent, the presenter): each question is a
    ``question_asked`` line to the run's watchers, and waits (the run's timer stopped) for an
    ``answer`` from any client, or ``decision_timeout`` (then the question's default is taken
    and recorded as an assumption)."""
    after: str | None = None
    """The ``run_id`` of an earlier run of this server to continue: its conversation (its
    task and final answer, and the turns before it) is shown to the agents first."""
    watch: bool = True
    """Subscribe this client to the run at once (its events follow ``run_accepted``)."""


@attrs.frozen(kw_only=True)
class Subscribe(_Client):
    """Watch a run: a ``snapshot`` of it now, then its events as they happen."""

    type: ClassVar[str] = "subscribe"
    run_id: str


@attrs.frozen(kw_only=True)
class Unsubscribe(_Client):
    type: ClassVar[str] = "unsubscribe"
    run_id: str


@attrs.frozen(kw_only=True)
class Cancel(_Client):
    """End a run now with its best answer so far (``termination: cancelled``)."""

    type: ClassVar[str] = "cancel"
    run_id: str


@attrs.frozen(kw_only=True)
class Override(_Client):
    """While the run's override window is open: let ``agent`` present instead of the vote's
    winner."""

    type: ClassVar[str] = "override"
    run_id: str
    agent: str = attrs.field(validator=_name)


@attrs.frozen(kw_only=True)
class Continue(_Client):
    """While the run's override window is open: keep the vote's winner."""

    type: ClassVar[str] = "continue"
    run_id: str


@attrs.frozen(kw_only=True)
class Answer(_Client):
    """The answer to the run's open question ``question_id`` (from its ``question_asked``
    line): an option's ``value`` or free text."""

    type: ClassVar[str] = "answer"
    run_id: str
    question_id: str
    value: str = attrs.field(validator=_answer_text)


class ApprovalDecision(enum.Enum):
    """What ``approve`` decides about a tool call waiting for approval."""

    ALLOW_ONCE = "allow_once"
    ALLOW_SESSION = "allow_session"
    """Run it, and the same again without asking for the rest of the run and of the runs
    continuing it (``after``): the same shell command exactly, any call of another tool."""
    DENY = "deny"


@attrs.frozen(kw_only=True)
class Approve(_Client):
    """The decision about the run's waiting tool call ``approval_id`` (from its
    ``approval_requested`` line); with ``deny``, ``feedback`` is what the model reads."""

    type: ClassVar[str] = "approve"
    run_id: str
    approval_id: str
    decision: ApprovalDecision
    feedback: str = attrs.field(default="", validator=_feedback_text)

    def __attrs_post_init__(self) -> None:
        if self.feedback.strip() and self.decision is not ApprovalDecision.DENY:
            raise ValueError(
                f"feedback goes with decision deny (the model reads it instead of the "
                f"tool's output); decision {self.decision.value} runs the call: drop feedback"
            )


@attrs.frozen(kw_only=True)
class Correct(_Client):
    """A correction for the run's PAOR agents (``agent``, or every agent): taken at each
    agent's next step boundary; its next plan accounts for it (docs/paor.md)."""

    type: ClassVar[str] = "correct"
    run_id: str
    text: str = attrs.field(validator=_correction_text)
    agent: str | None = None


ClientMessage = (
    Auth
    | StartRun
    | Subscribe
    | Unsubscribe
    | Cancel
    | Override
    | Continue
    | Answer
    | Approve
    | Correct
)

_CLIENT: dict[str, type[_Client]] = {
    cls.type: cls
    for cls in (
        Auth,
        StartRun,
        Subscribe,
        Unsubscribe,
        Cancel,
        Override,
        Continue,
        Answer,
        Approve,
        Correct,
    )
}


def client_types() -> tuple[str, ...]:
    return tuple(_CLIENT)


# ------------------------------------------------------------------------------ server


@attrs.frozen(kw_only=True)
class _Server:
    type: ClassVar[str]


@attrs.frozen(kw_only=True)
class Welcome(_Server):
    """The first frame of an authenticated connection."""

    type: ClassVar[str] = "welcome"
    server: str = "conclave"
    version: str
    protocol: int = PROTOCOL_VERSION
    runs: list[dict[str, Any]]
    """The runs the server knows: ``run_id``, ``task``, ``status`` (``running`` or
    ``ended``)."""


@attrs.frozen(kw_only=True)
class Accepted(_Server):
    """A ``start_run`` was taken: the run exists and has this id."""

    type: ClassVar[str] = "run_accepted"
    run_id: str
    request_id: str | None
    log_dir: str | None


@attrs.frozen(kw_only=True)
class Snapshot(_Server):
    """What a run looks like now, first thing after ``subscribe``: its
    :class:`~actors.events.view.RunView`, its stream's ``run_started`` line, and the open
    override window. Its events follow from ``next_seq`` on, without a gap."""

    type: ClassVar[str] = "snapshot"
    run_id: str
    request_id: str | None
    next_seq: int
    view: dict[str, Any]
    run_started: dict[str, Any] | None
    override_window: dict[str, Any] | None
    ended: bool
    question: dict[str, Any] | None = None
    """The question waiting for an ``answer`` (null if none): the fields of its
    ``question_asked`` line but ``call_id``."""
    approval: dict[str, Any] | None = None
    """The tool call waiting for ``approve`` (null if none): the fields of its
    ``approval_requested`` line but ``type`` and ``run_id``."""


@attrs.frozen(kw_only=True)
class OverrideWindow(_Server):
    """The vote is over and the run waits for ``override`` or ``continue``."""

    type: ClassVar[str] = "override_window"
    run_id: str
    winner: str
    label: str
    tally: dict[str, int]
    answers: dict[str, str]
    """Agent → the label of its latest answer: who may be chosen instead."""

    @classmethod
    def of(cls, run_id: str, request: OverrideRequest) -> OverrideWindow:
        return cls(
            run_id=run_id,
            winner=request.winner,
            label=request.label,
            tally=dict(request.tally),
            answers=dict(request.answers),
        )


@attrs.frozen(kw_only=True)
class Approval:
    """A tool call that must ask, waiting for a client's ``approve``."""

    approval_id: str
    """Unique in the run (``a1``, ``a2``, ...): what ``approve`` names."""
    agent: str
    tool: str
    arguments: str
    """The call's arguments as the model wrote them (JSON text)."""
    subject: str | None
    """The path or command the call touches, as written (null: neither)."""
    reason: str
    """Why it asks: ``delete_file deletes notes.txt (permission mode ask)``."""
    timeout: float | None
    """Seconds until nobody answering denies it (null: it waits until answered)."""


@attrs.frozen(kw_only=True)
class ApprovalRequested(_Server):
    """A tool call waits for a client's ``approve`` (one at a time per run; the run's timer
    is paused meanwhile). Its ``tool_approval_decided`` line says how it was decided."""

    type: ClassVar[str] = "approval_requested"
    run_id: str
    approval_id: str
    agent: str
    tool: str
    arguments: str
    subject: str | None
    reason: str
    timeout: float | None

    @classmethod
    def of(cls, run_id: str, approval: Approval) -> ApprovalRequested:
        return cls(run_id=run_id, **attrs.asdict(approval))


@attrs.frozen(kw_only=True)
class Verdict(_Server):
    """Whether an ``override`` or ``continue`` was taken, and if not, why."""

    type: ClassVar[str] = "verdict"
    run_id: str
    request_id: str | None
    decision: str
    """``override``, ``continue``, ``answer``, ``approve`` or ``correct``."""
    agent: str | None
    """The agent chosen by ``override``, or the one whose question was answered or whose
    call was approved or denied."""
    accepted: bool
    error: str | None
    question_id: str | None = None
    """For ``answer``: the question it answered."""
    approval_id: str | None = None
    """For ``approve``: the call it decided."""


@attrs.frozen(kw_only=True)
class Ack(_Server):
    """A ``cancel`` or ``unsubscribe`` was carried out."""

    type: ClassVar[str] = "ack"
    request: str
    run_id: str | None
    request_id: str | None


@attrs.frozen(kw_only=True)
class ErrorFrame(_Server):
    type: ClassVar[str] = "error"
    code: ErrorCode
    message: str
    request_id: str | None = None


ServerMessage = (
    Welcome | Accepted | Snapshot | OverrideWindow | ApprovalRequested | Verdict | Ack | ErrorFrame
)


# ------------------------------------------------------------------------------ the wire


def _strict(kind: type[Any], name: str) -> Callable[[Any, type[Any]], Any]:
    def structure(value: Any, _: type[Any]) -> Any:
        if type(value) is bool and kind is not bool:
            raise TypeError(f"expected {name}, got a boolean ({json.dumps(value)})")
        if not isinstance(value, kind):
            raise TypeError(f"expected {name}, got {json.dumps(value)[:80]}")
        return value

    return structure


def _number(value: Any, _: type[Any]) -> float:
    if type(value) is bool or not isinstance(value, int | float):
        raise TypeError(f"expected a number, got {json.dumps(value)[:80]}")
    return float(value)


def _is_enum(cls: Any) -> bool:
    return isinstance(cls, type) and issubclass(cls, enum.Enum)


def _enum(value: Any, cls: type[enum.Enum]) -> enum.Enum:
    try:
        return cls(value)
    except ValueError:
        known = ", ".join(str(member.value) for member in cls)
        raise ValueError(f"expected one of {known}, got {json.dumps(value)[:80]}") from None


def _describe(exc: BaseException, _type: Any = None) -> str:
    """One validation failure in words (``cattrs.transform_error`` adds where)."""
    if isinstance(exc, KeyError):
        return "required field missing"
    if isinstance(exc, cattrs.ForbiddenExtraKeysError):
        return f"unknown field(s) {', '.join(sorted(exc.extra_fields))}"
    return str(exc)


_wire = converter.copy()
_wire.register_structure_hook_func(_is_enum, _enum)
_wire.register_structure_hook(str, _strict(str, "a string"))
_wire.register_structure_hook(bool, _strict(bool, "true or false"))
_wire.register_structure_hook(int, _strict(int, "a whole number"))
_wire.register_structure_hook(float, _number)

_C = TypeVar("_C", bound=_Client)
_structure_fns: dict[type[_Client], Callable[[dict[str, Any], type[Any]], Any]] = {}


def decode_client(frame: str | bytes) -> ClientMessage:
    """The client message ``frame`` holds; :class:`ProtocolError` says what is wrong with it
    (naming the field) and carries the ``request_id`` when one could be read."""
    if isinstance(frame, bytes):
        try:
            frame = frame.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(
                ErrorCode.BAD_FRAME, f"the frame is not UTF-8 text (byte {exc.start})"
            ) from None
    try:
        # orjson, not json: it refuses a document nested deeper than MAX_DECODER_DEPTH with
        # an error, where json recurses in C and raises RecursionError.
        data = orjson.loads(frame)
    except orjson.JSONDecodeError as exc:
        raise ProtocolError(
            ErrorCode.BAD_FRAME, f"the frame is not JSON ({exc}); send one JSON object per frame"
        ) from None
    if not isinstance(data, dict):
        raise ProtocolError(
            ErrorCode.BAD_FRAME,
            f"the frame holds a JSON {_json_type(data)}; send one JSON object per frame",
        )
    request_id = data.get("request_id")
    request_id = request_id if isinstance(request_id, str) else None
    nested = next((k for k, v in data.items() if isinstance(v, dict | list)), None)
    if nested is not None:
        # Refused before anything walks the value: no field of a client message nests.
        raise ProtocolError(
            ErrorCode.BAD_MESSAGE,
            f"field {json.dumps(nested)[:60]} holds a JSON {_json_type(data[nested])}; every "
            "field of a client message is a string, a number, true, false or null",
            request_id=request_id,
        )
    tag = data.get("type")
    cls = _CLIENT.get(tag) if isinstance(tag, str) else None
    if cls is None:
        known = ", ".join(_CLIENT)
        got = "no type" if tag is None else f"type {json.dumps(tag)[:60]}"
        raise ProtocolError(
            ErrorCode.UNKNOWN_TYPE,
            f"{got}: expected one of {known}",
            request_id=request_id,
        )
    fn = _structure_fns.get(cls)
    if fn is None:
        fn = _structure_fns[cls] = make_dict_structure_fn(
            cls, _wire, _cattrs_forbid_extra_keys=True
        )
    body = {k: v for k, v in data.items() if k != "type"}
    try:
        message: ClientMessage = fn(body, cls)
    except cattrs.BaseValidationError as exc:
        notes = "; ".join(cattrs.transform_error(exc, path=cls.type, format_exception=_describe))
        raise ProtocolError(ErrorCode.BAD_MESSAGE, notes, request_id=request_id) from None
    except (ValueError, TypeError) as exc:
        raise ProtocolError(ErrorCode.BAD_MESSAGE, f"{tag}: {exc}", request_id=request_id) from None
    return message


def _json_type(value: Any) -> str:
    """What JSON calls the type of a decoded value."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    return "number" if type(value) in (int, float) else "literal"


def encode_server(message: ServerMessage) -> str:
    """``message`` as one line of JSON (no newline), ``type`` first."""
    return json_line({"type": message.type, **_wire.unstructure(message)})


def encode_snapshot(message: Snapshot) -> str:
    """``message`` as :func:`encode_server` writes it, without walking its view (already
    JSON-ready, and large) through the converter a second time."""
    return json_line({"type": message.type, **attrs.asdict(message, recurse=False)})


def with_request_id(line: str, request_id: str | None) -> str:
    """``line`` (an encoded server message whose ``request_id`` is null) with
    ``request_id`` instead: one encoding of a large message (a snapshot) serves every client
    that asks at the same point. The first ``"request_id": null`` is the field itself: the
    fields before it (``type``, ``run_id``) are strings, whose quotes JSON escapes."""
    if request_id is None:
        return line
    head, found, tail = line.partition('"request_id": null')
    assert found, "the line has no null request_id"
    field = json_line({"request_id": request_id})[1:-1]
    return f"{head}{field}{tail}"


def encode_client(message: ClientMessage) -> str:
    """``message`` as a client sends it (for Python clients and tests)."""
    return json_line({"type": message.type, **_wire.unstructure(message)})
