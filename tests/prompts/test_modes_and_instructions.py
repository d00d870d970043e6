"""An agent's system message: the collaboration mode's prefix first, then Conclave's rules;
the user's own instructions (an agent's ``system_prompt``) follow them, in the agent's own
message of each round (the presenter's system message). None of it changes what
``parse_prompt`` reads back."""

from __future__ import annotations

from conclave.actors.coordination.protocol import AnswerView
from conclave.actors.llm.protocol import ChatMessage
from conclave.actors.prompts.coordination import parse_prompt, presentation_messages, round_messages
from conclave.actors.prompts.modes import PLAN_MODE_MARKER, mode_prefix
from conclave.config.modes import CollaborationMode
from conclave.config.schema import FinalAnswerStrategy

TASK = "Name three uses of a paperclip"
ANSWERS = (AnswerView(label="agent1.1", content="Hold sheets of paper together."),)


def _round(mode: CollaborationMode, instructions: str = "") -> list[ChatMessage]:
    return round_messages(
        me="agent2",
        agents=2,
        task=TASK,
        answers=ANSWERS,
        tools=["new_answer", "vote"],
        persona="",
        mode=mode,
        instructions=instructions,
    )


def _present(mode: CollaborationMode, instructions: str = "") -> list[ChatMessage]:
    return presentation_messages(
        me="agent1",
        strategy=FinalAnswerStrategy.SYNTHESIZE,
        task=TASK,
        own_label="agent1.1",
        answers=ANSWERS,
        persona="",
        mode=mode,
        instructions=instructions,
    )


def test_a_plan_mode_round_starts_its_system_message_with_the_plan_prefix() -> None:
    system = _round(CollaborationMode.PLAN)[0].content
    assert system.startswith(mode_prefix(CollaborationMode.PLAN))


def test_an_execute_mode_round_starts_its_system_message_with_the_autonomy_prefix() -> None:
    system = _round(CollaborationMode.EXECUTE)[0].content
    assert system.startswith(mode_prefix(CollaborationMode.EXECUTE))


def test_a_default_round_has_no_mode_prefix() -> None:
    assert _round(CollaborationMode.DEFAULT)[0].content.startswith("You are one of 2 agents")


def test_a_plan_mode_presentation_is_told_to_present_a_plan() -> None:
    assert PLAN_MODE_MARKER in _present(CollaborationMode.PLAN)[0].content
    assert PLAN_MODE_MARKER not in _present(CollaborationMode.DEFAULT)[0].content


def test_the_users_instructions_follow_conclaves_rules_in_rounds_and_presentations() -> None:
    messages = _round(CollaborationMode.DEFAULT, "Answer in French.")
    assert "Answer in French." not in messages[0].content
    assert messages[-1].content.index("Answer in French.") > messages[-1].content.index(
        "You are agent2."
    )
    system = _present(CollaborationMode.DEFAULT, "Answer in French.")[0].content
    assert system.index("Answer in French.") > system.index("tags ending in")


def test_blank_instructions_add_nothing() -> None:
    assert _round(CollaborationMode.DEFAULT, "  \n") == _round(CollaborationMode.DEFAULT)


def test_a_prompt_with_a_mode_prefix_and_instructions_reads_back_the_same() -> None:
    view = parse_prompt(_round(CollaborationMode.PLAN, "You are agent9. tags ending in x;"))
    assert view.me == "agent2"
    assert view.task == TASK
    assert view.answers == {"agent1.1": "Hold sheets of paper together."}
