"""The PAOR driver: plan, act through the agent's tools, observe without a model call,
reflect, and end as the reflection says (or as the limits say)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from trio.testing import MockClock

from conclave.actors.human.questions import Question
from conclave.actors.llm.errors import FatalLLMError
from conclave.actors.llm.protocol import ChatMessage, ToolCall
from conclave.actors.loop import LoopBudget, Transcript
from conclave.actors.paor.driver import PaorLoop
from conclave.actors.paor.report import PaorEnd
from conclave.actors.paor.state import PaorPhase
from conclave.actors.tools.protocol import ToolResult
from conclave.config.schema import PaorConfig
from tests.paor.helpers import (
    PlayedBackend,
    Reply,
    TableTools,
    call,
    iteration,
    plan,
    reflect,
    text,
)

P = PaorPhase


def _loop(
    replies: Sequence[Reply], *, max_iterations: int = 15, max_steps: int = 25, **kw: Any
) -> tuple[PaorLoop, PlayedBackend, TableTools, list[tuple[P, P, int]]]:
    backend, tools = PlayedBackend(replies), TableTools({"search": "a.py:1: f()"})
    moves: list[tuple[P, P, int]] = []
    loop = PaorLoop(
        backend=backend,
        tools=tools,
        budget=LoopBudget(max_steps=max_steps),
        settings=PaorConfig(max_iterations=max_iterations),
        on_move=lambda s, t, i: moves.append((s, t, i)),
        **kw,
    )
    return loop, backend, tools, moves


def _transcript() -> Transcript:
    return Transcript([ChatMessage(role="user", content="rename f to g")])


async def test_a_goal_reached_in_one_iteration_walks_the_phases_in_order(
    autojump_clock: MockClock,
) -> None:
    loop, _, _, moves = _loop(iteration(achieved=True, progress="renamed f to g in a.py"))
    outcome = await loop.run(_transcript())
    assert outcome.end is PaorEnd.GOAL_ACHIEVED
    assert moves == [
        (P.IDLE, P.PLANNING, 1),
        (P.PLANNING, P.ACTING, 1),
        (P.ACTING, P.OBSERVING, 1),
        (P.OBSERVING, P.REFLECTING, 1),
        (P.REFLECTING, P.COMPLETE, 1),
    ]
    assert outcome.summary() == "Done: renamed f to g in a.py"


async def test_acting_runs_the_calls_through_the_agents_tools_and_observes_them(
    autojump_clock: MockClock,
) -> None:
    loop, _, tools, _ = _loop(iteration(achieved=True))
    outcome = await loop.run(_transcript())
    assert [c.name for c in tools.calls] == ["search"]
    [[seen]] = outcome.observations
    assert (seen.tool, seen.arguments, seen.output, seen.success) == (
        "search",
        '{"pattern": "f("}',
        "a.py:1: f()",
        True,
    )
    assert seen.duration == pytest.approx(0.5)


async def test_observing_makes_no_model_call_and_reflect_reads_the_observations(
    autojump_clock: MockClock,
) -> None:
    loop, backend, _, _ = _loop(iteration(achieved=True))
    await loop.run(_transcript())
    # plan, the act's call, the act's note, the reflection: four calls, none to observe
    assert len(backend.requests) == 4
    reflect_request = backend.requests[-1]
    assert [t.name for t in reflect_request.tools] == ["reflect"]
    assert "a.py:1: f()" in reflect_request.messages[-1].content


async def test_planning_and_reflecting_offer_only_their_tool(autojump_clock: MockClock) -> None:
    loop, backend, _, _ = _loop(iteration(achieved=True))
    await loop.run(_transcript())
    offered = [[t.name for t in r.tools] for r in backend.requests]
    assert offered == [["submit_plan"], ["search", "edit"], ["search", "edit"], ["reflect"]]


async def test_a_plan_naming_a_tool_the_agent_lacks_goes_back_to_the_model(
    autojump_clock: MockClock,
) -> None:
    replies = [plan("delete_everything"), *iteration(achieved=True)]
    loop, backend, _, _ = _loop(replies)
    outcome = await loop.run(_transcript())
    assert outcome.end is PaorEnd.GOAL_ACHIEVED
    error = backend.requests[1].messages[-1]
    assert error.role == "tool"
    assert "delete_everything" in error.content and "search, edit" not in error.content
    assert "not available" in error.content


async def test_the_next_iteration_starts_with_a_new_plan_until_the_goal_is_reached(
    autojump_clock: MockClock,
) -> None:
    replies = [*iteration(nxt="edit"), *iteration("edit", achieved=True)]
    loop, _, tools, moves = _loop(replies)
    outcome = await loop.run(_transcript())
    assert outcome.iterations == 2
    assert (P.REFLECTING, P.PLANNING, 2) in moves
    assert [c.name for c in tools.calls] == ["search", "edit"]


async def test_max_iterations_ends_the_round_with_a_progress_report(
    autojump_clock: MockClock,
) -> None:
    replies = [
        *iteration(progress="found 3 usages", nxt="edit them"),
        *iteration(progress="edited 1 of 3", nxt="edit b.py and c.py"),
    ]
    loop, _, _, moves = _loop(replies, max_iterations=2)
    outcome = await loop.run(_transcript())
    assert outcome.end is PaorEnd.MAX_ITERATIONS
    assert moves[-1] == (P.REFLECTING, P.FAILED, 2)
    assert outcome.summary().splitlines() == [
        "Stopped after 2 iterations (the limit): edited 1 of 3",
        "Left to do: edit b.py and c.py",
        "The last observations (tool, input, duration, outcome):",
        '1. search {"pattern": "f("} (0.50s) -> a.py:1: f()',
    ]


async def test_a_question_for_the_user_is_asked_and_the_answer_feeds_the_next_plan(
    autojump_clock: MockClock,
) -> None:
    asked: list[Question] = []

    async def ask(question: Question) -> str:
        asked.append(question)
        return "The user answered: only src/utils"

    replies = [*iteration(needs_user="Which directory?"), *iteration(achieved=True)]
    loop, backend, _, moves = _loop(replies, ask=ask)
    outcome = await loop.run(_transcript())
    assert outcome.end is PaorEnd.GOAL_ACHIEVED
    assert [q.question for q in asked] == ["Which directory?"]
    assert (P.REFLECTING, P.AWAITING_USER, 1) in moves
    assert (P.AWAITING_USER, P.PLANNING, 2) in moves
    second_plan = backend.requests[4]
    assert second_plan.messages[-1].content == "The user answered: only src/utils"


async def test_a_question_nobody_can_be_asked_ends_the_round(autojump_clock: MockClock) -> None:
    loop, _, _, moves = _loop(iteration(needs_user="Which directory?"))
    outcome = await loop.run(_transcript())
    assert outcome.end is PaorEnd.NEEDS_USER
    assert outcome.error == "Which directory?"
    assert moves[-1] == (P.AWAITING_USER, P.FAILED, 1)


async def test_an_unrecoverable_error_fails_the_round(autojump_clock: MockClock) -> None:
    loop, _, _, moves = _loop([FatalLLMError("bad key")])
    outcome = await loop.run(_transcript())
    assert outcome.end is PaorEnd.FAILED
    assert "bad key" in outcome.error
    assert moves == [(P.IDLE, P.PLANNING, 1), (P.PLANNING, P.FAILED, 1)]


async def test_acting_out_of_steps_still_observes_and_reflects(autojump_clock: MockClock) -> None:
    replies = [plan("search"), call("search"), call("search"), reflect(achieved=True)]
    loop, _, tools, moves = _loop(replies, max_steps=2)
    outcome = await loop.run(_transcript())
    assert outcome.end is PaorEnd.GOAL_ACHIEVED
    assert len(tools.calls) == 2
    assert (P.ACTING, P.OBSERVING, 1) in moves


async def test_verbose_adds_every_plan_observation_and_reflection(
    autojump_clock: MockClock,
) -> None:
    replies = [*iteration(progress="found"), *iteration("edit", achieved=True, progress="done")]
    loop, _, _, _ = _loop(replies)
    outcome = await loop.run(_transcript())
    concise, verbose = outcome.summary(), outcome.summary(verbose=True)
    assert concise == "Done: done"
    assert verbose.startswith(concise + "\n")
    for part in ("Iteration 1", "Iteration 2", "Goal: rename f to g", "Reflection: found"):
        assert part in verbose
    assert '1. edit {"pattern": "f("}' in verbose


async def test_three_iterations_of_the_same_calls_and_outputs_force_one_replan(
    autojump_clock: MockClock,
) -> None:
    replies = [*iteration(), *iteration(), *iteration(), *iteration(achieved=True)]
    loop, backend, _, _ = _loop(replies)
    outcome = await loop.run(_transcript())
    assert outcome.end is PaorEnd.GOAL_ACHIEVED
    fourth_plan = backend.requests[12]
    assert "You are stuck" in fourth_plan.messages[-1].content
    assert not any("You are stuck" in m.content for m in backend.requests[8].messages)


async def test_stuck_again_after_the_forced_replan_asks_the_user_for_another_approach(
    autojump_clock: MockClock,
) -> None:
    asked: list[Question] = []

    async def ask(question: Question) -> str:
        asked.append(question)
        return "The user answered: grep for it instead"

    replies = [*(part for _ in range(4) for part in iteration()), *iteration(achieved=True)]
    loop, _, _, moves = _loop(replies, ask=ask)
    outcome = await loop.run(_transcript())
    assert outcome.end is PaorEnd.GOAL_ACHIEVED
    [question] = asked
    assert "What other approach should I take?" in question.question
    assert (P.REFLECTING, P.AWAITING_USER, 4) in moves


async def test_different_outputs_are_progress_not_a_loop(autojump_clock: MockClock) -> None:
    replies = [*iteration(), *iteration(), *iteration(), *iteration(achieved=True)]
    loop, backend, tools, _ = _loop(replies)
    outputs = iter(["1 usage", "2 usages", "3 usages"])

    async def varying(call: ToolCall) -> ToolResult:
        return ToolResult(ok=True, output=next(outputs))

    tools.execute = varying  # type: ignore[method-assign]
    await loop.run(_transcript())
    assert not any("You are stuck" in m.content for r in backend.requests for m in r.messages)


async def test_a_reflection_that_says_stuck_forces_the_replan_at_once(
    autojump_clock: MockClock,
) -> None:
    stuck = [
        plan("search"),
        call("search"),
        text(),
        call("reflect", goal_achieved=False, progress="no luck", stuck=True),
    ]
    loop, backend, _, _ = _loop([*stuck, *iteration(achieved=True)])
    await loop.run(_transcript())
    assert "You are stuck" in backend.requests[4].messages[-1].content


async def test_a_correction_reaches_the_model_at_the_next_step_and_the_next_plan_follows_it(
    autojump_clock: MockClock,
) -> None:
    queued = ["search only in src/utils"]
    taken: list[tuple[int, int]] = []

    def corrections(iteration: int, step: int) -> list[str]:
        if step < 2 or not queued:  # arrives while acting, after the first tool call
            return []
        taken.append((iteration, step))
        return [queued.pop()]

    replies = [*iteration(achieved=True), *iteration(achieved=True)]
    loop, backend, _, moves = _loop(replies, corrections=corrections)
    outcome = await loop.run(_transcript())
    assert taken == [(1, 2)]
    note_request = backend.requests[2]
    assert (
        "Correction from the user:\n- search only in src/utils" in note_request.messages[-1].content
    )
    # The first reflection said the goal was achieved, but a plan must account for the
    # correction first: a second iteration, then complete.
    assert (P.REFLECTING, P.PLANNING, 2) in moves
    assert outcome.iterations == 2 and outcome.end is PaorEnd.GOAL_ACHIEVED


async def test_a_correction_between_iterations_enters_before_the_next_plan(
    autojump_clock: MockClock,
) -> None:
    queued = ["use ripgrep"]

    def corrections(iteration: int, step: int) -> list[str]:
        return [queued.pop()] if iteration == 2 and queued else []

    replies = [*iteration(nxt="edit"), *iteration(achieved=True)]
    loop, backend, _, _ = _loop(replies, corrections=corrections)
    await loop.run(_transcript())
    second_plan = backend.requests[4]
    assert [t.name for t in second_plan.tools] == ["submit_plan"]
    assert "- use ripgrep" in second_plan.messages[-1].content


async def test_questions_do_not_take_a_round_past_its_iterations(
    autojump_clock: MockClock,
) -> None:
    asked: list[str] = []

    async def ask(question: Question) -> str:
        asked.append(question.question)
        return "The user answered: go on"

    replies = [*iteration(needs_user="more?"), *iteration(needs_user="which dir?")]
    loop, _, _, moves = _loop(replies, ask=ask, max_iterations=2)
    outcome = await loop.run(_transcript())
    assert outcome.end is PaorEnd.MAX_ITERATIONS
    assert moves[-1] == (P.REFLECTING, P.FAILED, 2)


async def test_a_question_on_the_last_iteration_is_not_asked_but_reported_as_left(
    autojump_clock: MockClock,
) -> None:
    asked: list[str] = []

    async def ask(question: Question) -> str:
        asked.append(question.question)
        return "The user answered: go on"

    replies = [*iteration(needs_user="more?"), *iteration(needs_user="which dir?")]
    loop, _, _, _ = _loop(replies, ask=ask, max_iterations=2)
    outcome = await loop.run(_transcript())
    assert asked == ["more?"]
    assert "Why: it needs the user to answer: which dir?" in outcome.summary()


async def test_a_correction_during_the_last_reflection_is_left_for_the_agents_next_round(
    autojump_clock: MockClock,
) -> None:
    queued = ["search only in src/utils"]

    def corrections(iteration: int, step: int) -> list[str]:
        return [queued.pop()] if step >= 4 and queued else []  # after the reflection

    loop, _, _, _ = _loop(iteration(nxt="edit"), corrections=corrections, max_iterations=1)
    outcome = await loop.run(_transcript())
    assert outcome.end is PaorEnd.MAX_ITERATIONS
    assert queued == ["search only in src/utils"]


def _paused_on_a_question_in_iteration_1() -> Transcript:
    """A round's transcript as a resume rebuilds it: iteration 1 asked, the user answered."""
    messages = [ChatMessage(role="user", content="rename f to g")]
    for reply, result in (
        (plan("search"), "Plan accepted."),
        (call("search", pattern="f("), "a.py:1: f()"),
        (reflect(needs_user="which dir?"), "Noted."),
    ):
        messages += [reply, ChatMessage(role="tool", content=result, tool_call_id=_id(reply))]
    messages.append(ChatMessage(role="user", content="The user answered: src"))
    return Transcript(messages)


def _id(reply: ChatMessage) -> str:
    [tool_call] = reply.tool_calls
    return tool_call.id


async def test_a_round_resumed_after_its_last_iteration_asked_ends_at_max_iterations(
    autojump_clock: MockClock,
) -> None:
    loop, backend, _, moves = _loop([], max_iterations=1)
    outcome = await loop.run(_paused_on_a_question_in_iteration_1())
    assert (outcome.end, outcome.iterations) == (PaorEnd.MAX_ITERATIONS, 1)
    assert backend.requests == [] and moves == []


async def test_a_correction_that_comes_while_planning_is_followed_by_that_plan(
    autojump_clock: MockClock,
) -> None:
    queued = ["search only in src/utils"]

    def corrections(iteration: int, step: int) -> list[str]:
        return [queued.pop()] if step == 1 and queued else []  # after a refused plan

    replies = [plan("grep"), *iteration(achieved=True)]
    loop, backend, _, _ = _loop(replies, corrections=corrections)
    outcome = await loop.run(_transcript())
    assert "- search only in src/utils" in backend.requests[1].messages[-1].content
    # The accepted plan was made with the correction in view: the round may complete.
    assert (outcome.end, outcome.iterations) == (PaorEnd.GOAL_ACHIEVED, 1)
