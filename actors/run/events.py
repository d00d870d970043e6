"""What the run itself records: how its agents' sandboxes start, and how it ended (its last
event: nothing is recorded in the run's log after it)."""

from __future__ import annotations

from conclave.actors.events.base import DomainEvent
from conclave.actors.run.termination import DecidedBy, Termination
from conclave.runtime import message

__all__ = ["RunEnded", "SandboxOpened"]


@message()
class SandboxOpened(DomainEvent):
    """The sandbox the agents' shell commands run in, as the run starts (a run whose agents
    have tools): how far it confines them, and the containers of killed runs it removed."""

    sandbox: str
    """``local`` or ``docker`` (``orchestrator.sandbox.type``)."""
    confined: bool
    """``False``: a local sandbox without bubblewrap, whose commands can read and write
    whatever the user can and use the network."""
    network: bool
    warning: str | None = None
    """What a person should know before trusting it (unconfined, and what to do), or
    ``None``."""
    orphans_removed: tuple[str, ...] = ()
    """Containers whose owner process was gone (a run SIGKILLed), removed as this one
    started."""


@message()
class RunEnded(DomainEvent):
    termination: Termination
    winner: str | None
    final_answer: str | None
    decided_by: DecidedBy | None = None
    """``None`` without a final answer."""
    failure_reason: str | None = None
    """Why a ``failed`` run failed."""
