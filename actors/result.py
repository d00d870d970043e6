"""RunResult: what a run returns, and the event tap that counts what it cost."""

from __future__ import annotations

from typing import Any

import attrs

from actors.messages import LlmRequestFinished, LlmRequestStarted, RoundRestarted, RoundStarted
from runtime import DeadLetter, Delivered, Event

__all__ = ["AnswerRecord", "RunResult", "RunStats"]

TERMINATIONS = ("completed", "timeout", "cancelled", "failed")


@attrs.frozen(kw_only=True)
class AnswerRecord:
    label: str
    agent: str
    content: str


@attrs.frozen(kw_only=True)
class RunResult:
    final_answer: str | None
    winner: str | None
    presenter: str | None
    strategy: str
    answers: list[AnswerRecord]
    votes: dict[str, str]
    """Voter agent id → label voted for (the votes standing when coordination ended)."""
    rounds: int
    llm_calls: int
    """LLM requests started (including ones later cancelled)."""
    restarts: int
    termination: str
    failed_agents: dict[str, str]
    log_dir: str | None
    duration_s: float
    llm_completed: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    messages_routed: int = 0
    dead_letters: int = 0
    presentation_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


class RunStats:
    """Counts a run's cost from its event stream (the same events replay reads)."""

    def __init__(self) -> None:
        self.llm_calls = 0
        self.llm_completed = 0
        self.rounds = 0
        self.restarts = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.delivered = 0
        self.dead_letters = 0

    def record(self, event: Event) -> None:
        if isinstance(event, Delivered):
            self.delivered += 1
        elif isinstance(event, LlmRequestStarted):
            self.llm_calls += 1
        elif isinstance(event, LlmRequestFinished):
            if event.outcome == "ok":
                self.llm_completed += 1
            self.input_tokens += event.input_tokens
            self.output_tokens += event.output_tokens
        elif isinstance(event, RoundStarted):
            self.rounds += 1
        elif isinstance(event, RoundRestarted):
            self.restarts += 1
        elif isinstance(event, DeadLetter):
            self.dead_letters += 1
