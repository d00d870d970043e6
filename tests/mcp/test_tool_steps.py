"""A scripted agent's ``tool_steps`` name MCP tools as agents are offered them: ``mcp__<server>__
<tool>`` with the server's own tool name, hyphens and upper case included (MCP allows them);
what no agent could be offered is refused when the config loads, saying what a name is."""

from __future__ import annotations

import pytest

from conclave.config.loader import ConfigError, parse_config


def _steps(*tools: str) -> dict[str, object]:
    steps = [{"tool": t} for t in tools]
    return {"agents": [{"id": "a", "backend": {"type": "scripted", "tool_steps": steps}}]}


@pytest.mark.parametrize(
    "tool",
    [
        "mcp__every__get-sum",
        "mcp__web__Get-Sum",
        "mcp__my-srv__READ_file",
        "mcp__fs__read_text_file",
    ],
)
def test_an_mcp_tool_with_hyphens_or_upper_case_is_a_tool_step(tool: str) -> None:
    config = parse_config(_steps(tool))

    assert config.agents[0].backend.tool_steps[0].tool == tool  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "tool",
    [
        "Read_File",  # a built-in tool is lower case
        "read-file",
        "mcp__fs",  # no tool
        "mcp____tool",  # no server
        "mcp__fs__read.file",  # no API takes a dot
        "mcp__fs__" + "x" * 56,  # 65 characters
    ],
)
def test_a_name_no_agent_could_be_offered_is_refused_saying_what_a_tool_name_is(
    tool: str,
) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config(_steps(tool))

    assert "an MCP tool is mcp__<server>__<tool>, at most 64" in str(refused.value)
