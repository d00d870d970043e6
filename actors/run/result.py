"""RunResult: what a run returns, and the event tap that counts what it cost."""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import attrs

from conclave.actors.agent.events import (
    LlmRequestFinished,
    LlmRequestStarted,
    RoundRestarted,
    RoundStarted,
)
from conclave.actors.coordination.state import Answer
from conclave.actors.human.events import AssumptionRecorded, QuestionAnswered, QuestionAsked
from conclave.actors.human.questions import Assumption, PendingQuestion, Question
from conclave.actors.llm.protocol import CallOutcome
from conclave.actors.run.termination import DecidedBy, Termination
from conclave.actors.run.usage import RunUsage
from conclave.actors.workspace.writes import Writes
from conclave.runtime import DeadLetter, Event

__all__ = ["DecidedBy", "RunResult", "RunStats", "Termination", "Writes"]


@attrs.frozen(kw_only=True)
class RunResult:
    final_answer: str | None
    winner: str | None
    presenter: str | None
    strategy: str
    answers: list[Answer]
    votes: dict[str, str]
    """Voter agent id → label voted for (the votes standing when coordination ended)."""
    rounds: int
    llm_calls: int
    """LLM requests started (including ones later cancelled)."""
    restarts: int
    termination: Termination = attrs.field(converter=Termination)
    failed_agents: dict[str, str]
    log_dir: str | None
    duration_s: float
    llm_completed: int = 0
    input_tokens: int | None = 0
    """``None`` (and ``output_tokens`` too) when some call's server reported no usage."""
    output_tokens: int | None = 0
    messages_routed: int = 0
    dead_letters: int = 0
    presentation_error: str | None = None
    decided_by: DecidedBy | None = attrs.field(
        default=None, converter=attrs.converters.optional(DecidedBy)
    )
    """``None`` exactly when there is no final answer."""
    failure_reason: str | None = None
    """Why a ``failed`` run failed; ``None`` for every other termination."""
    usage: RunUsage = attrs.field(factory=RunUsage)
    """Tokens per agent and in total, with dollars where the backends give prices."""
    cost_usd: float | None = None
    """The run's cost in dollars; ``None`` unless every call it made had a price."""
    writes: Writes = attrs.field(factory=Writes)
    """Files the run wrote under its writable context paths (new, modified); empty when
    nothing was written or no context path is writable."""
    workspace_path: str | None = None
    """The deliverable: ``final/`` in the run's working directory, holding the workspace
    the final answer came with; ``None`` when agents had no tools (or it was not saved)."""
    assumptions: list[Assumption] = attrs.field(factory=list)
    """What agents went on with instead of asking: ``record_assumption`` calls, and the
    defaults taken for questions nobody answered (``--on-question default``)."""
    pending_question: PendingQuestion | None = None
    """The question the run stopped on (``--on-question fail`` or ``pause``), unanswered."""

    def to_json(self) -> dict[str, Any]:
        """Plain JSON types: the enums become their strings."""
        return attrs.asdict(self, value_serializer=_plain)


def _plain(_instance: object, _field: object, value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


class RunStats:
    """Counts a run's cost from its event stream (the same events replay reads)."""

    hears_deliveries = False
    """It counts none (:func:`~runtime.eventlog.hears_deliveries`)."""

    def __init__(self) -> None:
        self.llm_calls = 0
        self.llm_completed = 0
        self.rounds = 0
        self.restarts = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.unreported = 0
        """Replies whose server reported no usage: the token counts are then unknown."""
        self.dead_letters = 0
        self.assumptions: list[Assumption] = []
        self.pending_question: PendingQuestion | None = None
        """The last question asked and not yet answered."""
        self.paor_limited: set[str] = set()
        """Agents whose last PAOR round ran out of iterations."""

    def record(self, event: Event) -> None:
        # One dict lookup instead of a chain of isinstance checks: every event of the run
        # but plain deliveries passes through here, and most of them count nothing.
        counter = _COUNTERS.get(event.kind)
        if counter is not None:
            counter(self, event)

    def _llm_started(self, event: Event) -> None:
        self.llm_calls += 1

    def _llm_finished(self, event: Event) -> None:
        assert isinstance(event, LlmRequestFinished)
        if event.outcome is CallOutcome.OK:
            self.llm_completed += 1
            self.unreported += not event.usage_reported
        self.input_tokens += event.input_tokens
        self.output_tokens += event.output_tokens

    def _round_started(self, event: Event) -> None:
        self.rounds += 1

    def _round_restarted(self, event: Event) -> None:
        self.restarts += 1

    def _dead_letter(self, event: Event) -> None:
        self.dead_letters += 1

    def _question_asked(self, event: Event) -> None:
        assert isinstance(event, QuestionAsked)
        question = Question(
            question=event.question,
            context=event.context,
            severity=event.severity,
            options=event.options,
            default=event.default,
        )
        self.pending_question = PendingQuestion(
            agent=event.agent, question_id=event.question_id, question=question
        )

    def _question_answered(self, event: Event) -> None:
        assert isinstance(event, QuestionAnswered)
        pending = self.pending_question
        if pending is not None and pending.question_id == event.question_id:
            self.pending_question = None

    def _paor_finished(self, event: Event) -> None:
        # Imported here: a run without PAOR records no such event and loads neither.
        from conclave.actors.paor.events import PaorFinished
        from conclave.actors.paor.report import PaorEnd

        assert isinstance(event, PaorFinished)
        if event.end in (PaorEnd.MAX_ITERATIONS, PaorEnd.BUDGET_SPENT):
            self.paor_limited.add(event.agent)
        else:
            self.paor_limited.discard(event.agent)

    def _assumption(self, event: Event) -> None:
        assert isinstance(event, AssumptionRecorded)
        self.assumptions.append(
            Assumption(agent=event.agent, question=event.question, assumption=event.assumption)
        )


_COUNTERS: dict[str, Callable[[RunStats, Event], None]] = {
    LlmRequestStarted.kind: RunStats._llm_started,
    LlmRequestFinished.kind: RunStats._llm_finished,
    RoundStarted.kind: RunStats._round_started,
    RoundRestarted.kind: RunStats._round_restarted,
    DeadLetter.kind: RunStats._dead_letter,
    QuestionAsked.kind: RunStats._question_asked,
    QuestionAnswered.kind: RunStats._question_answered,
    AssumptionRecorded.kind: RunStats._assumption,
    "paor_finished": RunStats._paor_finished,
}
"""Keyed by kind (a kind never changes): PAOR's by its tag, so that the tap, which every
run opens, does not load PAOR's events before the run's first request (issue 24)."""
