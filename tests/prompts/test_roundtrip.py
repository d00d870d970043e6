"""Property: for any task and any answers (delimiters, newlines, unicode, fence-like hex
included), ``parse_prompt`` reads back exactly what the prompt was built from."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from conclave.actors.coordination.protocol import AnswerView
from conclave.actors.prompts.coordination import parse_prompt, presentation_messages, round_messages

_PIECES = (
    "\n",
    "\r\n",
    "<ORIGINAL MESSAGE>",
    "</ORIGINAL MESSAGE>",
    "<CURRENT ANSWERS from the agents>",
    "</CURRENT ANSWERS>",
    "<agent1.1>",
    "<end of agent1.1>",
    "<PRESENTATION strategy=synthesize own=agent1.1>",
    "</PRESENTATION>",
    "(no answers yet)",
    "tags ending in ",
    "You are agent7",
    " >",
)

text = st.lists(
    st.one_of(
        st.text(),
        st.sampled_from(_PIECES),
        st.text(alphabet="0123456789abcdef", min_size=12, max_size=12),
    ),
    max_size=8,
).map("".join)

labels = st.builds("agent{}.{}".format, st.integers(1, 10**6), st.integers(1, 10**3))
answer_sets = st.dictionaries(labels, text, max_size=6)


def _views(answers: dict[str, str]) -> list[AnswerView]:
    return [AnswerView(label=label, content=content) for label, content in answers.items()]


@given(task=text, answers=answer_sets)
def test_a_round_prompt_reads_back_its_task_and_answers_exactly(
    task: str, answers: dict[str, str]
) -> None:
    messages = round_messages(
        me="agent3",
        agents=4,
        task=task,
        answers=_views(answers),
        tools=["new_answer", "vote"],
        persona="",
    )

    view = parse_prompt(messages)

    assert (view.me, view.task, view.answers, view.presentation) == ("agent3", task, answers, None)


@given(task=text, answers=answer_sets)
def test_a_presentation_prompt_reads_back_its_task_and_answers_exactly(
    task: str, answers: dict[str, str]
) -> None:
    messages = presentation_messages(
        me="agent3",
        strategy="synthesize",
        task=task,
        own_label="agent3.1",
        answers=_views(answers),
        persona="",
    )

    view = parse_prompt(messages)

    assert (view.task, view.answers) == (task, answers)
    assert (view.presentation, view.own_label) == ("synthesize", "agent3.1")
