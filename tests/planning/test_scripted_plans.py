"""The scripted backend's plans: in a plan-mode prompt a round's new_answer becomes a JSON
plan and a presentation one plan (merged under synthesize); outside plan mode replies pass
through untouched."""

from __future__ import annotations

import json

from conclave.actors.coordination.protocol import AnswerView
from conclave.actors.llm.protocol import ChatMessage, ToolCall
from conclave.actors.planning.flow import revision_history, revision_task
from conclave.actors.planning.plan import Plan, PlanStep, parse_plan
from conclave.actors.planning.scripted_plans import (
    as_plan_reply,
    merge_plans,
    plan_from_text,
    tagged,
)
from conclave.actors.prompts.coordination import presentation_messages, round_messages
from conclave.config.modes import CollaborationMode

TASK = "Tidy the docs"
TEXT = "On “Tidy the docs”, agent2's view:\n1. Read first.\n2. Fix links."


def _round(mode: CollaborationMode) -> list[ChatMessage]:
    return round_messages(
        me="agent2",
        agents=2,
        task=TASK,
        answers=[],
        tools=["new_answer", "vote"],
        persona="",
        mode=mode,
    )


def _answer(content: str) -> ChatMessage:
    arguments = json.dumps({"content": content})
    return ChatMessage(
        role="assistant", tool_calls=(ToolCall(id="c", name="new_answer", arguments=arguments),)
    )


def _content(reply: ChatMessage) -> str:
    content = json.loads(reply.tool_calls[0].arguments)["content"]
    assert isinstance(content, str)
    return content


def _presentation(strategy: str, answers: dict[str, str]) -> list[ChatMessage]:
    return presentation_messages(
        me="agent1",
        strategy=strategy,
        task=TASK,
        own_label="agent1.1",
        answers=[AnswerView(label=label, content=text) for label, text in answers.items()],
        persona="",
        mode=CollaborationMode.PLAN,
    )


def _plan(goal: str, *actions: str, risks: tuple[str, ...] = ()) -> Plan:
    steps = tuple(PlanStep(step_number=n, action=a) for n, a in enumerate(actions, start=1))
    return Plan(goal=goal, steps=steps, risks=risks)


def test_outside_plan_mode_the_reply_is_returned_as_it_is() -> None:
    reply = _answer(TEXT)

    for mode in (CollaborationMode.DEFAULT, CollaborationMode.EXECUTE):
        assert as_plan_reply(_round(mode), reply) is reply


def test_in_plan_mode_a_new_answer_is_a_plan_of_the_composed_lines() -> None:
    reply = as_plan_reply(_round(CollaborationMode.PLAN), _answer(TEXT))

    plan = parse_plan(_content(reply))
    assert plan is not None
    assert plan.goal == TASK
    assert [step.action for step in plan.steps] == ["Read first.", "Fix links."]


def test_in_plan_mode_a_new_answer_is_tagged_as_a_proposed_plan() -> None:
    reply = as_plan_reply(_round(CollaborationMode.PLAN), _answer(TEXT))

    assert _content(reply).startswith("<proposed_plan>")


def test_distinct_scripted_answers_stay_distinct_plans() -> None:
    other = TEXT.replace("agent2", "agent3")
    messages = _round(CollaborationMode.PLAN)

    first = _content(as_plan_reply(messages, _answer(TEXT)))
    second = _content(as_plan_reply(messages, _answer(other)))

    assert first != second


def test_an_answer_that_already_is_a_plan_is_kept() -> None:
    given = tagged(_plan("mine", "step"))

    reply = as_plan_reply(_round(CollaborationMode.PLAN), _answer(given))

    assert _content(reply) == given


def test_malformed_arguments_stay_malformed() -> None:
    broken = ChatMessage(
        role="assistant",
        tool_calls=(ToolCall(id="c", name="new_answer", arguments='{"content": "unterm'),),
    )

    reply = as_plan_reply(_round(CollaborationMode.PLAN), broken)

    assert reply.tool_calls[0].arguments == '{"content": "unterm'


def test_a_vote_is_untouched() -> None:
    vote = ChatMessage(
        role="assistant",
        tool_calls=(ToolCall(id="v", name="vote", arguments='{"agent_id": "agent1"}'),),
    )

    assert as_plan_reply(_round(CollaborationMode.PLAN), vote) == vote


def test_a_synthesis_merges_the_answers_plans_into_one() -> None:
    answers = {
        "agent1.1": tagged(_plan("Tidy", "Read", "Fix", risks=("slow",))),
        "agent2.1": tagged(_plan("Tidy too", "Fix", "Publish", risks=("slow", "rude"))),
    }
    reply = ChatMessage(role="assistant", content="merged text")

    presented = as_plan_reply(_presentation("synthesize", answers), reply)

    plan = parse_plan(presented.content)
    assert plan is not None
    assert [(s.step_number, s.action) for s in plan.steps] == [
        (1, "Read"),
        (2, "Fix"),
        (3, "Publish"),
    ]
    assert plan.risks == ("slow", "rude")


def test_a_winners_presentation_is_its_own_plan() -> None:
    own = _plan("Mine", "Do it")
    answers = {"agent1.1": tagged(own), "agent2.1": tagged(_plan("Theirs", "Other"))}
    reply = ChatMessage(role="assistant", content="presented")

    presented = as_plan_reply(_presentation("winner_present", answers), reply)

    assert parse_plan(presented.content) == own


def test_lines_of_text_become_numbered_steps_without_their_numbers() -> None:
    plan = plan_from_text(TASK, TEXT)

    assert [(s.step_number, s.action) for s in plan.steps] == [
        (1, "Read first."),
        (2, "Fix links."),
    ]
    assert plan.steps[0].reason == "On “Tidy the docs”, agent2's view:"


def test_one_line_of_text_is_a_plan_of_one_step() -> None:
    plan = plan_from_text(TASK, "Just fix it")

    assert [s.action for s in plan.steps] == ["Just fix it"]


def test_merging_keeps_the_first_goal_and_each_step_once() -> None:
    merged = merge_plans([_plan("A", "x", "y"), _plan("B", "y", "z")])

    assert merged.goal == "A"
    assert [s.action for s in merged.steps] == ["x", "y", "z"]


def test_a_tool_call_while_presenting_is_untouched() -> None:
    answers = {"agent1.1": tagged(_plan("Mine", "Do it"))}
    step = ChatMessage(
        role="assistant",
        tool_calls=(ToolCall(id="t", name="read_file", arguments='{"path": "notes.txt"}'),),
    )

    assert as_plan_reply(_presentation("winner_present", answers), step) is step


def _revising(feedback: str, plan: Plan) -> list[ChatMessage]:
    return round_messages(
        me="agent2",
        agents=2,
        task=revision_task(feedback),
        answers=[],
        tools=["new_answer", "vote"],
        persona="",
        history=revision_history((), TASK, plan),
        mode=CollaborationMode.PLAN,
    )


def test_a_revision_keeps_the_plans_goal_and_steps_and_adds_one_for_the_feedback() -> None:
    proposed = _plan(TASK, "Read first.", "Fix links.")
    composed = f"On “{revision_task('add a step for tests')}”, agent2's view:\n1. Other idea."

    reply = as_plan_reply(_revising("add a step for tests", proposed), _answer(composed))

    revised = parse_plan(_content(reply))
    assert revised is not None
    assert revised.goal == TASK
    assert [step.action for step in revised.steps] == [
        "Read first.",
        "Fix links.",
        "Address the feedback: add a step for tests",
    ]
    assert [step.step_number for step in revised.steps] == [1, 2, 3]
