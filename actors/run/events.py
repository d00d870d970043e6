"""What the run itself records: the paused run it resumes, how its agents' sandboxes start,
and how it ended (its last event: nothing is recorded in the run's log after it)."""

from __future__ import annotations

from conclave.actors.events.base import DomainEvent
from conclave.actors.run.termination import DecidedBy, Termination
from conclave.runtime import message

__all__ = ["RunEnded", "RunResumed", "SandboxOpened"]


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
class RunResumed(DomainEvent):
    """This run goes on with a paused one (``conclave resume``): recorded right after the
    log opens, before anything else happens, so a reader finds it in the first events. The
    paused run's log is never written again (it stays as the pause left it); a reader that
    wants the whole run reads it first (:mod:`actors.run.lineage`)."""

    resumed_from: str
    """The paused run's log directory, relative to this run's (``..`` for
    ``RUN_DIR/resumed-N``, so the two move together), absolute if this run keeps no log."""
    agent: str
    """The agent that asked."""
    question_id: str
    """The question the pause waited on, answered as this run starts."""


@message()
class RunEnded(DomainEvent):
    termination: Termination
    winner: str | None
    final_answer: str | None
    decided_by: DecidedBy | None = None
    """``None`` without a final answer."""
    failure_reason: str | None = None
    """Why a ``failed`` run failed."""
