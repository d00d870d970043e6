"""docs/exit-codes.md is the one place a user reads what a command returns: it names every
exit code and every field of the JSON result, and the README links it."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import attrs
import pytest

from conclave.actors.coordination.state import Answer
from conclave.actors.run.result import RunResult
from conclave.ui.exit_codes import ExitCode

ROOT = Path(__file__).parents[2]
PAGE = (ROOT / "docs" / "exit-codes.md").read_text(encoding="utf-8")


def _table_keys(section: str) -> list[str]:
    """The first column of the table under the ``## section`` heading."""
    body = PAGE.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([^`]+)` \|", body, flags=re.MULTILINE)


@pytest.mark.parametrize("code", list(ExitCode), ids=lambda c: c.name)
def test_every_exit_code_is_documented(code: ExitCode) -> None:
    assert str(int(code)) in _table_keys("Exit codes")


def test_the_page_documents_no_exit_code_that_does_not_exist() -> None:
    assert sorted(_table_keys("Exit codes"), key=int) == [str(int(c)) for c in ExitCode]


def test_every_field_of_the_json_result_is_documented_and_nothing_else() -> None:
    fields = {f.name for f in attrs.fields(RunResult)}

    assert set(_table_keys("The JSON result")) == fields


def test_the_answer_records_fields_are_documented() -> None:
    row = next(line for line in PAGE.splitlines() if line.startswith("| `answers` |"))

    for field in attrs.fields(Answer):
        assert f'"{field.name}"' in row


def test_the_readme_links_the_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")

    assert "(docs/exit-codes.md)" in readme


@pytest.mark.parametrize("code", list(ExitCode), ids=lambda c: c.name)
def test_the_readmes_exit_code_paragraph_names_every_exit_code(code: ExitCode) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    paragraph = readme.split("\nExit codes: ", 1)[1].split("\n\n", 1)[0]

    assert f"`{int(code)}`" in paragraph


def test_the_resume_synopsis_names_every_option_of_conclave_resume() -> None:
    from conclave.ui.cli import build_parser

    [resume] = [
        action.choices["resume"]
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    ]
    [synopsis] = re.findall(r"`(conclave resume RUN_DIR --answer VALUE \[[^`]*)`", PAGE)
    options = {o for a in resume._actions for o in a.option_strings if o.startswith("--")}
    assert {o for o in options - {"--help"} if o not in synopsis} == set()
