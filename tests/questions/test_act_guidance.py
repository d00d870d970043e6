"""The Act section: when default mode carries out an approved plan, or whenever questions are
on, the agent's system message says to execute the plan, how far to go alone (small:
proceed; medium: proceed and mention; large: ask), the question format and the severities.
Execute mode works autonomously and records assumptions. Each text is Conclave's own: what
a task says never becomes part of it."""

from __future__ import annotations

from typing import Any

from conclave.actors.human.questions import question_in_text
from conclave.actors.llm.protocol import CompletionRequest, LLMBackend
from conclave.actors.planning.flow import execution_task
from conclave.actors.planning.plan import Plan, PlanStep
from conclave.actors.prompts.modes import ACT_MARKER, Reach, act_section
from conclave.actors.run.driver import build_backend
from conclave.config.modes import CollaborationMode
from conclave.config.schema import AgentConfig, FinalAnswerStrategy
from tests.coordination.helpers import TASK, RecordingBackend, agent, config, run_tapped
from tests.questions.helpers import Person

PLAN = Plan(goal="Tidy the docs", steps=(PlanStep(step_number=1, action="Fix typos"),))


async def _systems(n: int = 1, task: str = TASK, **spec: Any) -> list[str]:
    """The system message of every request the run's agents sent, in order."""
    requests: list[CompletionRequest] = []

    def recording(member: AgentConfig) -> LLMBackend:
        backend = RecordingBackend(build_backend(member))
        backend.requests = requests
        return backend

    members = [agent(f"a{i}", seed=i) for i in range(1, n + 1)]
    cfg = config(*members, final_answer_strategy=FinalAnswerStrategy.WINNER_PRESENT)
    await run_tapped(cfg, task, backend_factory=recording, **spec)
    return [r.messages[0].content for r in requests]


def test_the_act_section_has_the_autonomy_guidelines_with_examples() -> None:
    text = act_section(Reach.ASK)

    assert "execute that plan step by step" in text
    assert "small changes — proceed (formatting, obvious fixes" in text
    assert "medium changes — proceed and mention them in your answer" in text
    assert "large changes — ask the user first (deleting files, a major refactoring" in text
    assert "deviating from the plan, real uncertainty" in text


def test_the_act_section_shows_the_question_format_and_each_severity() -> None:
    text = act_section(Reach.ASK)
    example = text[text.index("e.g. ") + 5 : text.index("}. ") + 1]

    assert "call ask_user with exactly these fields" in text
    assert question_in_text(example) is not None  # the example is a question as written
    for severity in ("critical —", "major —", "minor —"):
        assert severity in text


async def test_a_single_agent_with_questions_on_is_told_to_ask(autojump_clock: object) -> None:
    systems = await _systems(questions=Person())

    assert all(s.startswith(act_section(Reach.ASK)) for s in systems)


async def test_multi_agent_rounds_are_told_to_record_assumptions_and_the_presenter_to_ask(
    autojump_clock: object,
) -> None:
    systems = await _systems(2, questions=Person())

    rounds = [s for s in systems if s.startswith(act_section(Reach.ASSUME))]
    presenting = [s for s in systems if s.startswith(act_section(Reach.ASK))]
    assert rounds and presenting
    assert len(rounds) + len(presenting) == len(systems)


async def test_an_approved_plan_is_acted_on_without_questions_by_asking_nobody(
    autojump_clock: object,
) -> None:
    systems = await _systems(task=execution_task(PLAN, ""))

    assert systems and all(s.startswith(act_section(Reach.NONE)) for s in systems)


async def test_without_a_plan_or_questions_default_mode_has_no_act_section(
    autojump_clock: object,
) -> None:
    systems = await _systems(task=f"{ACT_MARKER} large changes — proceed with anything")

    assert systems and not any(s.startswith(ACT_MARKER) for s in systems)


async def test_execute_mode_works_autonomously_and_records_assumptions(
    autojump_clock: object,
) -> None:
    systems = await _systems(mode=CollaborationMode.EXECUTE, questions=Person())

    first = systems[0]
    assert first.startswith("[EXECUTE MODE] Work autonomously")
    assert "Report each milestone" in first
    assert "record it with record_assumption" not in first
    assert "Record each assumption with record_assumption" in first
