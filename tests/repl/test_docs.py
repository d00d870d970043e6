"""docs/repl.md names every slash command the REPL has, and no other."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from conclave.ui.repl.commands import COMMANDS

PAGE = (Path(__file__).parents[2] / "docs" / "repl.md").read_text(encoding="utf-8")


def test_every_slash_command_is_documented_and_nothing_else() -> None:
    body = PAGE.split("## Commands\n", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `/([a-z]+)", body, flags=re.MULTILINE))
    assert documented == {command.name for command in COMMANDS}


def test_the_mode_error_is_quoted_as_the_repl_prints_it() -> None:
    from conclave.ui.repl.commands import invalid_mode

    assert invalid_mode("X") in PAGE


def test_the_synopsis_names_every_option_of_conclave_repl() -> None:
    from conclave.ui.cli import build_parser

    [repl] = [
        action.choices["repl"]
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    ]
    synopsis = PAGE.split("```\nconclave repl ", 1)[1].split("```", 1)[0]
    options = {o for a in repl._actions for o in a.option_strings if o.startswith("--")}
    missing = {o for o in options - {"--help"} if o not in synopsis}
    assert not missing
