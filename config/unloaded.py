"""Checks across sections of a config that did not load whole, so one pass says everything.

A section with a problem (an unset ``${VAR}``, a list where text belongs) cannot be built,
and the checks that compare sections (ids unique across agents, a scripted vote against the
number of agents, the visibility against it) never ran on a config that failed: fixing the
first problem only revealed the next. :func:`unloaded_problems` runs them on what the walk
could read (:attr:`config.walker.SchemaWalker.built`) and on the agents' ids as written, each
problem at its line and column (an agent's MCP server named like a top-level one, too), and
leaves out a check that needs what could not be read.
"""

from __future__ import annotations

import yaml

from conclave.config.problems import Problem
from conclave.config.schema import AgentConfig, OrchestratorConfig
from conclave.config.validation import partial_problems
from conclave.config.walker import INVALID, SchemaWalker

__all__ = ["unloaded_problems"]


def unloaded_problems(walker: SchemaWalker, root: yaml.MappingNode) -> list[Problem]:
    """The whole-config problems of the document ``root`` that ``walker`` walked and could
    not build: to add to ``walker.errors``."""
    sections = {key: value for key, _, value in walker.pairs(root, "")}
    agents_node = sections.get("agents")
    if not isinstance(agents_node, yaml.SequenceNode):
        return []
    count = len(agents_node.value)
    agents = [walker.built.get(f"agents[{i}]") for i in range(count)]
    read = [agent if isinstance(agent, AgentConfig) else None for agent in agents]
    found: list[Problem] = []
    if None in read:
        # With every agent read, the schema's own checks of the lists have reported these.
        found += _duplicate_ids(walker, agents_node)
        found += _shared_server_names(walker, read, sections)
    found += partial_problems(
        read, _visibility(walker, sections), source=walker.source, locations=walker.locations
    )
    return found


def _visibility(walker: SchemaWalker, sections: dict[str, yaml.Node]) -> str | None:
    if "orchestrator" not in sections:
        return OrchestratorConfig().visibility
    orchestrator = walker.built.get("orchestrator")
    return orchestrator.visibility if isinstance(orchestrator, OrchestratorConfig) else None


def _shared_server_names(
    walker: SchemaWalker, agents: list[AgentConfig | None], sections: dict[str, yaml.Node]
) -> list[Problem]:
    """Each server of an agent that was read named like a top-level server that was read."""
    servers = sections.get("mcp_servers")
    count = len(servers.value) if isinstance(servers, yaml.SequenceNode) else 0
    shared = {
        server.name
        for i in range(count)
        if (server := walker.built.get(f"mcp_servers[{i}]")) is not None
    }
    found: list[Problem] = []
    for index, agent in enumerate(agents):
        if agent is None:
            continue
        for number, server in enumerate(agent.mcp_servers):
            if server.name not in shared:
                continue
            path = f"agents[{index}].mcp_servers[{number}]"
            line, column = walker.locations.get(path, (None, None))
            found.append(
                Problem(
                    message=f"agent {agent.id!r} has an MCP server named {server.name!r}, like "
                    "a top-level one: the tool names would clash; rename one of them",
                    path=path,
                    file=walker.source,
                    line=line,
                    column=column,
                    expected="a name no top-level MCP server has",
                    got=server.name,
                )
            )
    return found


def _duplicate_ids(walker: SchemaWalker, agents: yaml.SequenceNode) -> list[Problem]:
    """Each id written a second time, at the second one, naming the line of the first."""
    first: dict[str, int | None] = {}
    found: list[Problem] = []
    for index, agent in enumerate(agents.value):
        if not isinstance(agent, yaml.MappingNode):
            continue
        path = f"agents[{index}].id"
        for key, _, value_node in walker.pairs(agent, f"agents[{index}]"):
            if key != "id" or not isinstance(value_node, yaml.ScalarNode):
                continue
            value = walker.scalar(value_node, path)
            if value is INVALID or not isinstance(value, str):
                continue
            mark = value_node.start_mark  # None for a config built from Python data
            line = mark.line + 1 if mark is not None else None
            if value not in first:
                first[value] = line
                continue
            where = f" (first on line {first[value]})" if first[value] is not None else ""
            found.append(
                Problem(
                    message=f"agent id {value!r} appears twice{where}; ids must be unique: "
                    "rename one",
                    path=path,
                    file=walker.source,
                    line=line,
                    column=mark.column + 1 if mark is not None else None,
                    expected="an id no other agent has",
                    got=value,
                )
            )
    return found
