"""The actor kernel: typed messages, mailboxes, routing rules, supervision, event log.

Knows nothing about LLMs; imports nothing from ``actors`` or ``ui``.
"""

from runtime.actor import Actor, ActorContext, ActorFactory
from runtime.codec import DecodeError, converter, decode, dumps, encode, loads
from runtime.errors import (
    AskTimeout,
    ConclaveRuntimeError,
    MailboxFull,
    RedirectLoop,
    RestartIntensityExceeded,
    RoutingRuleError,
    SystemClosed,
    Undeliverable,
)
from runtime.eventlog import EventLogCorrupt, EventLogReading, JsonlEventLog, MemoryTap, read_event_log
from runtime.events import (
    ChildExited,
    ChildStarted,
    ChildStopped,
    DeadLetter,
    DeadLetterCause,
    Delivered,
    Event,
    Held,
    LogOpened,
    Redirected,
    Released,
    SupervisorEscalated,
)
from runtime.mailbox import Mailbox, MailboxSpec, MailboxStatistics, Overflow
from runtime.messages import Address, Envelope, Message, message
from runtime.routing import DELIVER, Deliver, Drop, Facts, Hold, Redirect, RoutingRule
from runtime.supervision import ChildSpec, Restart, StopSignal, Strategy, Supervisor, SupervisorSpec
from runtime.system import ActorSystem, SystemStatistics, open_actor_system

__all__ = [
    "DELIVER",
    "Actor",
    "ActorContext",
    "ActorFactory",
    "ActorSystem",
    "Address",
    "AskTimeout",
    "ChildExited",
    "ChildSpec",
    "ChildStarted",
    "ChildStopped",
    "ConclaveRuntimeError",
    "DeadLetter",
    "DeadLetterCause",
    "DecodeError",
    "Deliver",
    "Delivered",
    "Drop",
    "Envelope",
    "Event",
    "EventLogCorrupt",
    "EventLogReading",
    "Facts",
    "Held",
    "Hold",
    "JsonlEventLog",
    "LogOpened",
    "Mailbox",
    "MailboxFull",
    "MailboxSpec",
    "MailboxStatistics",
    "MemoryTap",
    "Message",
    "Overflow",
    "Redirect",
    "RedirectLoop",
    "Redirected",
    "Released",
    "Restart",
    "RestartIntensityExceeded",
    "RoutingRule",
    "RoutingRuleError",
    "StopSignal",
    "Strategy",
    "Supervisor",
    "SupervisorEscalated",
    "SupervisorSpec",
    "SystemClosed",
    "SystemStatistics",
    "Undeliverable",
    "converter",
    "decode",
    "dumps",
    "encode",
    "loads",
    "message",
    "open_actor_system",
    "read_event_log",
]
