"""The short diffs writes and edits return."""

from __future__ import annotations

from conclave.actors.tools.text import short_diff


def test_a_diff_keeps_two_lines_of_context() -> None:
    before = "".join(f"{i}\n" for i in range(10))
    after = before.replace("5\n", "five\n")
    assert short_diff(before, after, path="n.txt", max_lines=50) == (
        "--- a/n.txt\n+++ b/n.txt\n@@ -4,5 +4,5 @@\n 3\n 4\n-5\n+five\n 6\n 7\n"
    )


def test_a_missing_final_newline_is_marked() -> None:
    diff = short_diff("a\n", "a\nb", path="n.txt", max_lines=50)
    assert diff.endswith("+b\n\\ No newline at end of file\n")


def test_no_change_is_an_empty_diff() -> None:
    assert short_diff("same\n", "same\n", path="n.txt", max_lines=50) == ""


def test_an_absolute_paths_diff_headers_have_no_double_slash() -> None:
    diff = short_diff("a\n", "b\n", path="/tmp/ctx/n.txt", max_lines=50)
    assert diff.startswith("--- a/tmp/ctx/n.txt\n+++ b/tmp/ctx/n.txt\n")
