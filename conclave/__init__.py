"""Conclave: several LLM agents attack one task in parallel, see each other's answers, vote,
and a winner presents the final answer.

The public API, for programs that run Conclave instead of typing ``conclave``::

    import trio
    import conclave

    config = conclave.load_config("conclave.yaml")
    spec = conclave.RunSpec(task="Name three uses of a paperclip", config=config, log_dir=...)
    result = trio.run(conclave.run, spec)
    print(result.final_answer)

- running: :func:`run` (to the end, never raises for what happens inside the run),
  :func:`drive` (the same, with an :class:`EventHub` to watch it live), :func:`open_run`
  (``async with``: a :class:`RunHandle` to cancel or steer it), :class:`RunSpec` in,
  :class:`RunResult` out;
- configuration: :func:`load_config` → :class:`ConclaveConfig`;
- a person in the loop: the :class:`HumanGate` protocol and its headless policies;
- watching: :class:`EventHub` subscriptions deliver :class:`DomainEvent` instances, every
  one of them exported here by name (``conclave.AnswerAdded``, ``conclave.RunEnded``...),
  with the enums their closed fields hold (``conclave.AgentStatus``, ``conclave.Termination``,
  ``conclave.CallPurpose``...).

Everything else lives in the subpackages: ``conclave.runtime`` (the actor kernel),
``conclave.actors`` (the domain), ``conclave.config``, ``conclave.ui`` (the command and the
front ends) and ``conclave.benchmarks``.

Names are imported on first use, not by ``import conclave``: the command's start-up (the
REPL draws its prompt before the runtime is imported) and a batch worker's spawn pay only for
the modules they use, and ``import conclave.config`` never imports trio.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from conclave.actors.agent.events import (
        AgentStatusChanged,
        AnswersInjected,
        LlmRequestFinished,
        LlmRequestStarted,
        RoundRestarted,
        RoundStarted,
        TranscriptFailed,
    )
    from conclave.actors.agent.status import AgentStatus
    from conclave.actors.coordination.events import (
        AgentExcluded,
        AnswerAdded,
        AnswerRepeated,
        FinalAnswerProduced,
        HumanGateFailed,
        PresentationFailed,
        PresenterReplaced,
        RunStarted,
        VoteAdded,
        VotesCleared,
        VotingComplete,
    )
    from conclave.actors.events.base import DomainEvent
    from conclave.actors.events.hub import EventHub, SubscriberDropped, Subscription
    from conclave.actors.events.loop import LlmRetry, TextDelta, ToolCallFinished, ToolCallStarted
    from conclave.actors.human.gate import (
        Accept,
        AcceptWinner,
        Choose,
        ChooseAgent,
        HumanGate,
        OverrideChoice,
        OverrideRequest,
    )
    from conclave.actors.llm.protocol import CallOutcome, CallPurpose, StopReason
    from conclave.actors.mcp.events import McpServerFailed, McpServerReady
    from conclave.actors.run.driver import drive, open_run, run
    from conclave.actors.run.events import RunEnded, SandboxOpened
    from conclave.actors.run.handle import RunHandle
    from conclave.actors.run.result import RunResult, RunStats
    from conclave.actors.run.spec import RunSpec
    from conclave.actors.run.termination import DecidedBy, Termination
    from conclave.actors.workspace.events import (
        ContextPathsChanged,
        FinalWorkspaceSaved,
        PresentingForWrites,
        SnapshotPublished,
    )
    from conclave.actors.workspace.writes import PathWrite, WriteKind, Writes
    from conclave.config.loader import load_config
    from conclave.config.schema import ConclaveConfig, FinalAnswerStrategy, InFlightPolicy

_EXPORTS: dict[str, tuple[str, ...]] = {
    "conclave.actors.run.driver": ("drive", "open_run", "run"),
    "conclave.actors.run.handle": ("RunHandle",),
    "conclave.actors.run.result": ("RunResult", "RunStats"),
    "conclave.actors.run.spec": ("RunSpec",),
    "conclave.config.loader": ("load_config",),
    "conclave.config.schema": ("ConclaveConfig", "FinalAnswerStrategy", "InFlightPolicy"),
    "conclave.actors.agent.status": ("AgentStatus",),
    "conclave.actors.llm.protocol": ("CallOutcome", "CallPurpose", "StopReason"),
    "conclave.actors.run.termination": ("DecidedBy", "Termination"),
    "conclave.actors.human.gate": (
        "Accept",
        "AcceptWinner",
        "Choose",
        "ChooseAgent",
        "HumanGate",
        "OverrideChoice",
        "OverrideRequest",
    ),
    "conclave.actors.events.base": ("DomainEvent",),
    "conclave.actors.events.hub": ("EventHub", "SubscriberDropped", "Subscription"),
    "conclave.actors.events.loop": ("LlmRetry", "TextDelta", "ToolCallFinished", "ToolCallStarted"),
    "conclave.actors.agent.events": (
        "AgentStatusChanged",
        "AnswersInjected",
        "LlmRequestFinished",
        "LlmRequestStarted",
        "RoundRestarted",
        "RoundStarted",
        "TranscriptFailed",
    ),
    "conclave.actors.coordination.events": (
        "AgentExcluded",
        "AnswerAdded",
        "AnswerRepeated",
        "FinalAnswerProduced",
        "HumanGateFailed",
        "PresentationFailed",
        "PresenterReplaced",
        "RunStarted",
        "VoteAdded",
        "VotesCleared",
        "VotingComplete",
    ),
    "conclave.actors.mcp.events": ("McpServerFailed", "McpServerReady"),
    "conclave.actors.run.events": ("RunEnded", "SandboxOpened"),
    "conclave.actors.workspace.events": (
        "ContextPathsChanged",
        "FinalWorkspaceSaved",
        "PresentingForWrites",
        "SnapshotPublished",
    ),
    "conclave.actors.workspace.writes": ("PathWrite", "WriteKind", "Writes"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "Accept",
    "AcceptWinner",
    "AgentExcluded",
    "AgentStatus",
    "AgentStatusChanged",
    "AnswerAdded",
    "AnswerRepeated",
    "AnswersInjected",
    "CallOutcome",
    "CallPurpose",
    "Choose",
    "ChooseAgent",
    "ConclaveConfig",
    "ContextPathsChanged",
    "DecidedBy",
    "DomainEvent",
    "EventHub",
    "FinalAnswerProduced",
    "FinalAnswerStrategy",
    "FinalWorkspaceSaved",
    "HumanGate",
    "HumanGateFailed",
    "InFlightPolicy",
    "LlmRequestFinished",
    "LlmRequestStarted",
    "LlmRetry",
    "McpServerFailed",
    "McpServerReady",
    "OverrideChoice",
    "OverrideRequest",
    "PathWrite",
    "PresentationFailed",
    "PresenterReplaced",
    "PresentingForWrites",
    "RoundRestarted",
    "RoundStarted",
    "RunEnded",
    "RunHandle",
    "RunResult",
    "RunSpec",
    "RunStarted",
    "RunStats",
    "SandboxOpened",
    "SnapshotPublished",
    "StopReason",
    "SubscriberDropped",
    "Subscription",
    "Termination",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallStarted",
    "TranscriptFailed",
    "VoteAdded",
    "VotesCleared",
    "VotingComplete",
    "WriteKind",
    "Writes",
    "drive",
    "load_config",
    "open_run",
    "run",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'conclave' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
