"""The loop engine: every LLM tool loop in Conclave is one ``run_loop``."""

from conclave.actors.loop.budget import LoopBudget
from conclave.actors.loop.checkpoint import Abort, Checkpoint, CheckpointDecision, Continue, Inject
from conclave.actors.loop.engine import (
    CallOutcome,
    LoopEnd,
    LoopObserver,
    LoopOutcome,
    feedback,
    run_loop,
)
from conclave.actors.loop.terminals import (
    Final,
    Proceed,
    Terminal,
    TextTerminal,
    ToolTerminal,
    Violation,
)
from conclave.actors.loop.transcript import Transcript

__all__ = [
    "Abort",
    "CallOutcome",
    "Checkpoint",
    "CheckpointDecision",
    "Continue",
    "Final",
    "Inject",
    "LoopBudget",
    "LoopEnd",
    "LoopObserver",
    "LoopOutcome",
    "Proceed",
    "Terminal",
    "TextTerminal",
    "ToolTerminal",
    "Transcript",
    "Violation",
    "feedback",
    "run_loop",
]
