"""Labels: ``agentN.M`` is the M-th answer of agent N; one type formats and parses them."""

from __future__ import annotations

import pytest

from conclave.actors.coordination.label import Label, anonymous_id


def test_a_label_reads_back_as_written() -> None:
    label = Label.parse("agent12.3")

    assert (label.number, label.seq, label.author, str(label)) == (12, 3, "agent12", "agent12.3")


def test_labels_order_by_agent_number_then_answer_not_as_text() -> None:
    texts = ["agent10.1", "agent2.2", "agent2.10", "agent2.1"]

    assert [str(x) for x in sorted(map(Label.parse, texts))] == [
        "agent2.1",
        "agent2.2",
        "agent2.10",
        "agent10.1",
    ]


@pytest.mark.parametrize(
    ("a", "b"), [("agent2.1", "agent2.2"), ("agent2.9", "agent2.10"), ("agent2.5", "agent10.1")]
)
def test_every_comparison_orders_by_agent_then_answer(a: str, b: str) -> None:
    low, high = Label.parse(a), Label.parse(b)

    assert (low < high, low <= high, low > high, low >= high) == (True, True, False, False)
    assert (high < low, high <= low, high > low, high >= low) == (False, False, True, True)
    assert (low <= low, low >= low, low < low, low > low) == (True, True, False, False)


def test_a_label_is_made_from_an_anonymous_id_and_an_answer_number() -> None:
    assert str(Label.of(anonymous_id(4), 2)) == "agent4.2"


@pytest.mark.parametrize("text", ["agent2", "agent0.1", "agent2.0", "agentX.1", "agent2.1 ", ""])
def test_text_that_is_not_a_label_is_refused_with_the_expected_shape(text: str) -> None:
    with pytest.raises(ValueError, match=r"expected agentN\.M with N and M from 1"):
        Label.parse(text)
