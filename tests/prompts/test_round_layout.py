"""How a round's prompt is laid out for a provider's prompt cache, and what it asks for.

What every agent of a run shares comes first and what changes last: the system message is
the same for every agent and every round, the task and the answers follow (a new answer
goes last), and the agent's own message (who it is, its files and instructions, which
workflow tools it has now) ends the prompt. It names only the tools offered."""

from __future__ import annotations

import re

import pytest

from conclave.actors.coordination.protocol import AnswerView
from conclave.actors.llm.protocol import ChatMessage
from conclave.actors.prompts.coordination import round_messages
from conclave.actors.prompts.workspace import WorkspaceNote

TASK = "Name three uses of a paperclip"
A = AnswerView(label="agent2.1", content="Hold sheets together.", order=1)
B = AnswerView(label="agent1.1", content="Pick a lock.", order=2)


def _round(
    me: str = "agent1",
    answers: tuple[AnswerView, ...] = (A, B),
    tools: tuple[str, ...] = ("new_answer", "vote"),
    persona: str = "",
    instructions: str = "",
    workspace: WorkspaceNote | None = None,
) -> list[ChatMessage]:
    return round_messages(
        me=me,
        agents=3,
        task=TASK,
        answers=answers,
        tools=tools,
        persona=persona,
        instructions=instructions,
        workspace=workspace,
    )


def _said(messages: list[ChatMessage]) -> str:
    return "\n".join(m.content for m in messages)


@pytest.mark.parametrize("answers", [(), (A,)])
def test_a_round_without_vote_never_mentions_voting(answers: tuple[AnswerView, ...]) -> None:
    said = _said(_round(answers=answers, tools=("new_answer",)))

    assert re.search(r"\bvote\b", said) is None
    assert "Call new_answer" in said


def test_a_round_without_new_answer_asks_only_for_a_vote() -> None:
    said = _round(tools=("vote",))[-1].content

    assert "Call vote" in said
    assert "new_answer" not in said


def test_a_round_with_both_tools_names_both() -> None:
    said = _round()[-1].content

    assert "Call new_answer" in said and "call vote" in said


def test_the_system_message_is_the_same_for_every_agent_and_every_round() -> None:
    first = _round(me="agent1", answers=(), tools=("new_answer",))
    later = _round(
        me="agent3",
        persona="a skeptic",
        instructions="Answer in French.",
        workspace=WorkspaceNote(workspace="/runs/r/workspaces/a3"),
    )

    assert first[0] == later[0]


def test_every_agent_shown_the_same_answers_shares_all_but_its_own_last_message() -> None:
    one = _round(me="agent1")
    other = _round(me="agent3", persona="a skeptic", instructions="Be brief.")

    assert one[:-1] == other[:-1]
    assert one[-1] != other[-1]
    assert one[-1].content.startswith("You are agent1.")


def test_a_new_answer_extends_the_earlier_prompt_at_the_end_of_its_answers() -> None:
    earlier = _round(answers=(A,))
    later = _round(answers=(A, B))
    body = earlier[-2].content

    shared = body[: body.index("</CURRENT ANSWERS")]

    assert later[0] == earlier[0]
    assert later[-2].content.startswith(shared)
    assert later[-2].content.index(B.content) > len(shared) - len("</CURRENT ANSWERS")
