"""Problems render one per line, top to bottom, compiler style; suggestions come from the
edit distance."""

from __future__ import annotations

import pytest

from conclave.config.problems import ConfigError, Problem, closest, edit_distance


def test_a_problem_renders_file_line_column_path_message_and_suggestion() -> None:
    problem = Problem(
        message="unknown key 'persna' in agents[1]",
        path="agents[1].persna",
        file="c.yaml",
        line=5,
        column=5,
        suggestion="persona",
    )
    assert problem.render() == (
        "c.yaml:5:5: agents[1].persna: unknown key 'persna' in agents[1]; did you mean 'persona'?"
    )


def test_parts_that_are_unknown_are_left_out() -> None:
    assert Problem(message="too big", file="c.yaml").render() == "c.yaml: too big"
    assert Problem(message="too big").render() == "too big"


def test_a_config_error_lists_its_problems_one_per_line_top_to_bottom() -> None:
    error = ConfigError(
        problems=[
            Problem(message="b", file="c.yaml", line=9, column=1),
            Problem(message="later", file="c.yaml"),
            Problem(message="a", file="c.yaml", line=2, column=7),
        ]
    )
    assert str(error).splitlines() == ["c.yaml:2:7: a", "c.yaml:9:1: b", "c.yaml: later"]


def test_a_config_error_from_a_message_is_one_problem() -> None:
    error = ConfigError("cannot read config c.yaml")
    assert str(error) == "cannot read config c.yaml"
    assert error.problems == (Problem(message="cannot read config c.yaml"),)


def test_a_config_error_needs_something_to_say() -> None:
    with pytest.raises(ValueError, match="needs a message or at least one problem"):
        ConfigError()


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [("openai", "openai", 0), ("opnai", "openai", 1), ("mdoel", "model", 1), ("", "ab", 2)],
)
def test_edit_distance_counts_a_swap_of_neighbours_as_one(a: str, b: str, distance: int) -> None:
    assert edit_distance(a, b) == distance


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("opnai", "openai"),
        ("OpenAI", "openai"),
        ("anthropc", "anthropic"),
        ("gemini", None),
        ("x", None),
    ],
)
def test_closest_suggests_only_a_near_spelling(word: str, expected: str | None) -> None:
    assert closest(word, ["scripted", "openai", "anthropic"]) == expected
