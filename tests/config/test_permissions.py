"""The ``permissions`` section and ``--permission-mode``: read, defaulted, refused at the
line and column of what is wrong, and the rules' matching."""

from __future__ import annotations

import argparse

import pytest

from conclave.config.flags import add_run_flags
from conclave.config.loader import read_config_text
from conclave.config.problems import ConfigError
from conclave.config.resolver import RunFlags, resolve
from conclave.config.schema.permissions import PermissionMode, parse_rule

AGENTS = "agents:\n  - id: a\n"


def _problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as raised:
        read_config_text(text, source="c.yaml", environ={})
    return [p.render() for p in raised.value.problems]


def test_nothing_asks_by_default() -> None:
    config = read_config_text(AGENTS, source="c.yaml", environ={}).config
    assert config.permissions.mode is PermissionMode.BYPASS


def test_the_mode_and_rules_are_read() -> None:
    text = AGENTS + (
        "permissions:\n  mode: accept-edits\n  allow: ['run_shell(git status*)']\n"
        "  deny: ['delete_file']\n"
    )
    permissions = read_config_text(text, source="c.yaml", environ={}).config.permissions
    assert permissions.mode is PermissionMode.ACCEPT_EDITS
    assert [r.text for r in permissions.allow_rules()] == ["run_shell(git status*)"]
    assert [r.tool for r in permissions.deny_rules()] == ["delete_file"]


def test_an_unknown_mode_is_refused_at_its_line_with_the_valid_values() -> None:
    [problem] = _problems(AGENTS + "permissions:\n  mode: accept\n")
    assert problem.startswith("c.yaml:4:9: permissions.mode: ")
    assert "ask, accept-edits, bypass" in problem


def test_a_malformed_rule_is_refused_at_its_own_item() -> None:
    text = AGENTS + "permissions:\n  allow:\n    - read_file\n    - 'run_shell(git status'\n"
    [problem] = _problems(text)
    assert problem.startswith("c.yaml:6:7: permissions.allow[1]: ")
    assert "TOOL(PATTERN)" in problem


def test_every_malformed_rule_of_a_list_is_refused_at_once() -> None:
    text = AGENTS + "permissions:\n  allow:\n    - '(x)'\n    - read_file\n    - 'foo bar'\n"
    problems = _problems(text)
    assert [p.split(": ")[0] for p in problems] == ["c.yaml:5:7", "c.yaml:7:7"]
    assert [p.split(": ")[1] for p in problems] == ["permissions.allow[0]", "permissions.allow[2]"]


def test_the_permission_mode_flag_wins_over_the_config() -> None:
    parser = argparse.ArgumentParser()
    add_run_flags(parser)
    args = parser.parse_args(["--agents", "1", "--permission-mode", "ask"])
    assert resolve(RunFlags.from_args(args)).base.permissions.mode is PermissionMode.ASK


def test_an_unknown_permission_mode_flag_is_refused_by_the_parser() -> None:
    parser = argparse.ArgumentParser()
    add_run_flags(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--permission-mode", "sometimes"])


def test_a_command_pattern_star_matches_anything() -> None:
    rule = parse_rule("run_shell(git status*)")
    assert rule.matches("run_shell", ("git status --short",), paths=False)
    assert not rule.matches("run_shell", ("git push",), paths=False)


def test_a_path_pattern_star_stays_in_one_directory_and_double_star_crosses() -> None:
    assert parse_rule("write_file(docs/**)").matches("write_file", ("docs/a/b.md",), paths=True)
    assert not parse_rule("write_file(docs/*)").matches("write_file", ("docs/a/b.md",), paths=True)


def test_a_rule_names_mcp_tools_with_a_wildcard() -> None:
    rule = parse_rule("mcp__git__*")
    assert rule.matches("mcp__git__git_commit", (), paths=False)
    assert not rule.matches("write_file", ("x",), paths=True)


def test_a_rule_for_another_tool_does_not_match() -> None:
    assert not parse_rule("write_file(**)").matches("delete_file", ("a",), paths=True)
