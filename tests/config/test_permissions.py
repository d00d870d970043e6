"""The ``permissions`` section and ``--permission-mode``: read, defaulted, refused at the
line and column of what is wrong, and the rules' matching."""

from __future__ import annotations

import argparse

import pytest

from conclave.actors.coordination.workflow import NEW_ANSWER, VOTE
from conclave.actors.human.questions import ASK_USER, RECORD_ASSUMPTION
from conclave.actors.interactive.session import LAUNCH_RUN
from conclave.actors.paor.plan import SUBMIT_PLAN
from conclave.actors.paor.reflect import REFLECT
from conclave.actors.planning.progress import UPDATE_PLAN
from conclave.actors.tools.catalogue import ALL_TOOLS
from conclave.config.flags import add_run_flags
from conclave.config.loader import read_config_text
from conclave.config.problems import ConfigError
from conclave.config.resolver import RunFlags, resolve
from conclave.config.schema.permissions import BUILTIN_TOOLS, PermissionMode, parse_rule

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


def test_a_rule_naming_no_tool_is_refused_at_its_item_with_the_closest_name() -> None:
    [problem] = _problems(AGENTS + "permissions:\n  deny: [read_file, wirte_file]\n")
    assert problem.startswith("c.yaml:4:21: permissions.deny[1]: 'wirte_file' names no tool")
    assert "did you mean 'write_file'?" in problem


def test_a_rule_with_a_pattern_is_checked_by_its_tools_name() -> None:
    [problem] = _problems(AGENTS + "permissions:\n  allow: ['run_shel(git status*)']\n")
    assert "did you mean 'run_shell'?" in problem


def test_a_wildcard_matching_no_tool_is_refused() -> None:
    [problem] = _problems(AGENTS + "permissions:\n  deny: ['wirte*']\n")
    assert "'wirte*' matches no tool" in problem


def test_an_mcp_tool_with_one_underscore_is_refused_with_the_mcp_spelling() -> None:
    [problem] = _problems(AGENTS + "permissions:\n  deny: [mcp_git__push]\n")
    assert "did you mean 'mcp__git__push'?" in problem


@pytest.mark.parametrize("rule", ["mcp__git__push", "mcp__git__*", "mcp*", "*", "write*"])
def test_mcp_tools_and_wildcards_that_may_match_a_tool_are_read(rule: str) -> None:
    text = AGENTS + f"permissions:\n  deny: ['{rule}']\n"
    config = read_config_text(text, source="c.yaml", environ={}).config
    assert [r.text for r in config.permissions.deny_rules()] == [rule]


def test_the_built_in_tool_names_are_the_tools_specs() -> None:
    schemas = [LAUNCH_RUN, ASK_USER, RECORD_ASSUMPTION, NEW_ANSWER, VOTE, SUBMIT_PLAN, REFLECT]
    names = {spec.name for spec in ALL_TOOLS} | {s.name for s in schemas} | {UPDATE_PLAN}
    assert set(BUILTIN_TOOLS) == names


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
