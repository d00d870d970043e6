"""RunSpec: everything a run needs to know before it starts, from any front end.

The CLI, the REPL, batch files and the server each build one and hand it to
:func:`actors.run.driver.drive` (or ``open_run``); the run itself decides nothing about where
its inputs came from.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from conclave.actors.agent.resume import ResumePoint
from conclave.actors.human.gate import HumanGate
from conclave.actors.human.questions import QuestionGate
from conclave.actors.human.tool_approval import ToolApprover
from conclave.actors.llm.pool import BackendPool
from conclave.actors.llm.protocol import LLMBackend
from conclave.actors.run.faults import FaultPlan
from conclave.actors.run.turn import Turn
from conclave.actors.tools.permissions import SessionAllowances
from conclave.config.modes import CollaborationMode
from conclave.config.schema import AgentConfig, ConclaveConfig, ScriptedBackendConfig

if TYPE_CHECKING:  # a run opens MCP sessions only when its config names servers (run.services)
    from conclave.actors.mcp.session import McpSession

__all__ = ["RunSpec", "build_backend"]


def build_backend(agent: AgentConfig) -> LLMBackend:
    """A scripted agent's backend, outside any pool: for tests that wrap one."""
    policy = agent.backend
    if not isinstance(policy, ScriptedBackendConfig):
        raise TypeError(
            f"agent {agent.id!r}: a {policy.type} backend comes from the backend pool; "
            "leave RunSpec.backend_factory unset to use it"
        )
    # Imported here: the scripted backend and its scripts (some 30 modules) are for tests
    # and demos; a run on a real backend must not load them before its first request.
    from conclave.actors.llm.scripted import ScriptedBackend

    return ScriptedBackend(
        agent_id=agent.id, persona=agent.persona, policy=policy, seed=policy.seed
    )


def _positive_budget(_inst: object, _attr: attrs.Attribute[float | None], value: object) -> None:
    if value is None:
        return
    if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
        raise ValueError(f"max_cost_usd must be a number of dollars > 0 or None; got {value!r}")


@attrs.frozen(kw_only=True)
class RunSpec:
    task: str
    config: ConclaveConfig
    """The config after mode overrides (see :func:`config.modes.apply_modes`)."""
    mode: CollaborationMode = CollaborationMode.DEFAULT
    """Plan, execute or neither: chooses each agent's tools and system-prompt prefix."""
    history: tuple[Turn, ...] = ()
    """Earlier turns of the conversation, oldest first: shown to every agent as real user and
    assistant messages before the task."""
    log_dir: Path | None = None
    """Where ``events.jsonl`` and the agents' transcripts (``transcripts.jsonl``) go;
    ``None``: the run keeps no log."""
    log_deliveries: bool = False
    """Write every delivered message to the event log too (``conclave run
    --log-deliveries``), for debugging the runtime: by default the log holds the run's
    domain events and routing decisions, not each delivery (see :mod:`runtime.eventlog`)."""
    workdir: Path | None = None
    """Where the agents' workspaces, the answers' snapshots and the deliverable (``final/``)
    go when agents have tools (see :mod:`actors.run.services`); ``None``: the log dir, or a
    new temporary directory for a run without one."""
    human: HumanGate | None = None
    """Who decides the override window (later: plans, questions, run approval); the run's
    timer is paused while it decides. ``None``: nobody is asked and the vote stands.
    :class:`~actors.human.manual.ManualGate` leaves the decision to
    :meth:`RunHandle.override` and :meth:`RunHandle.continue_`."""
    tool_approver: ToolApprover | None = None
    """Who decides a tool call that ``permissions`` says must ask (the REPL's approval card),
    with the run's timer paused; ``None``: nobody, and such a call is refused, the model
    told why (headless runs; see :mod:`actors.human.tool_approval`)."""
    tool_allowances: SessionAllowances | None = None
    """What a person allowed for the session (a REPL session's, shared by its runs);
    ``None``: the run keeps its own."""
    questions: QuestionGate | None = None
    """Who answers the agents' questions (a person's card, a headless policy); the run's
    timer is paused while a question waits. ``None``: questions are off, and no agent is
    offered ``ask_user`` or ``record_assumption``."""
    resume: ResumePoint | None = None
    """Go on with a paused run: its asking agent's first round starts from this transcript
    (which ends with the user's answer) instead of a fresh prompt."""
    backends: BackendPool | None = None
    """A pool that outlives the run (the REPL's, a batch's); ``None``: the run opens its own
    and closes it when it ends."""
    mcp: McpSession | None = None
    """MCP servers that outlive the run (a REPL session's), lent to it while it runs;
    ``None``: the run starts its configured servers itself and stops them when it ends."""
    backend_factory: Callable[[AgentConfig], LLMBackend] | None = None
    """A seam for tests: each agent's backend from this instead of the pool."""
    max_cost_usd: float | None = attrs.field(default=None, validator=_positive_budget)
    """Halt the run, like a timeout, once its priced calls cost this many dollars."""
    faults: FaultPlan | None = None
    """Crash actors at chosen moments (tests, the chaos harness); see :mod:`actors.run.faults`."""
