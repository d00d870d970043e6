"""Checks that need the whole config, shared by ``conclave run`` and ``conclave validate``.

The schema checks each value on its own; these check values against each other (how many
agents there are against the visibility, a scripted vote against the agents it can name).
``run`` applies them to the config after its flags and mode overrides, ``validate`` to the
file as written; both call :func:`check_runnable`, so the two never disagree about a config.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from conclave.config.limits import MAX_ALL_TO_ALL
from conclave.config.problems import ConfigError, Problem
from conclave.config.schema import AgentConfig, ConclaveConfig, parse_visibility
from conclave.config.schema.backends import ScriptedBackendConfig, voted_agent_number

__all__ = ["check_runnable", "is_all_to_all", "partial_problems", "problems"]


def is_all_to_all(visibility: str, agents: int) -> bool:
    """Whether every agent sees every other: ``all``, or islands at least as large as the run
    (one island holds everyone)."""
    kind, k = parse_visibility(visibility)
    return kind == "all" or (kind == "islands" and k >= agents)


def problems(
    config: ConclaveConfig,
    *,
    source: str | None = None,
    locations: Mapping[str, tuple[int, int]] | None = None,
) -> list[Problem]:
    """Everything that would make this config fail or misbehave as a run, each at its
    field; with ``locations`` (a loaded file's, :class:`config.loader.LoadedConfig`), at
    the field's line and column in ``source``."""
    return partial_problems(
        list(config.agents),
        config.orchestrator.visibility,
        source=source,
        locations=locations,
    )


def partial_problems(
    agents: Sequence[AgentConfig | None],
    visibility: str | None,
    *,
    source: str | None = None,
    locations: Mapping[str, tuple[int, int]] | None = None,
) -> list[Problem]:
    """:func:`problems` for a config that did not load whole: ``agents`` has ``None`` for
    each agent that could not be read, ``visibility`` is ``None`` when the orchestrator
    could not be read. The agents are still counted; a check that needs what was not read
    is left out (the file's own problems already name it)."""
    where = locations or {}

    def found_at(path: str, message: str, expected: str, got: str) -> Problem:
        line, column = where.get(path, (None, None))
        return Problem(
            message=message,
            path=path,
            file=source,
            line=line,
            column=column,
            expected=expected,
            got=got,
        )

    found: list[Problem] = []
    n = len(agents)
    if visibility is not None and n > MAX_ALL_TO_ALL and is_all_to_all(visibility, n):
        found.append(
            found_at(
                "orchestrator.visibility",
                f"visibility {visibility!r} with {n:,} agents is all-to-all: every answer would "
                f"go to every agent (~{n * n:,} updates), which is limited to {MAX_ALL_TO_ALL} "
                "agents; use visibility ring or islands:K with K < the number of agents "
                "(--visibility, or orchestrator.visibility in the config)",
                expected=f"ring or islands:K with K < {n:,} (more than {MAX_ALL_TO_ALL} agents)",
                got=visibility,
            )
        )
    wrong: dict[int, list[tuple[int, str]]] = {}
    for index, agent in enumerate(agents):
        if agent is None or not isinstance(agent.backend, ScriptedBackendConfig):
            continue
        k = voted_agent_number(agent.backend.vote)
        if k is not None and k > n:
            wrong.setdefault(k, []).append((index, agent.id))
    for k, voters in sorted(wrong.items()):
        found.append(
            found_at(
                f"agents[{voters[0][0]}].backend.vote",
                f"{_agents([voter for _, voter in voters])} for agent{k}, but the run "
                f"has {n} agent{'' if n == 1 else 's'} (agent1 to agent{n}, in config order); "
                "vote for one of them, best, or self",
                expected=f"best, self, or agent1 to agent{n}",
                got=f"agent{k}",
            )
        )
    return found


def check_runnable(
    config: ConclaveConfig,
    *,
    source: str | None = None,
    locations: Mapping[str, tuple[int, int]] | None = None,
) -> None:
    """Raise :class:`ConfigError` listing every problem :func:`problems` finds, naming
    ``source`` (the config file's path) when the config came from a file."""
    found = problems(config, source=source, locations=locations)
    if found:
        raise ConfigError(problems=found)


def _agents(ids: list[str], shown: int = 3) -> str:
    """``agent 'a' votes`` or ``agents 'a', 'b' and 7 more vote``: short at any count."""
    if len(ids) == 1:
        return f"agent {ids[0]!r} votes"
    names = ", ".join(repr(i) for i in ids[:shown])
    more = f" and {len(ids) - shown:,} more" if len(ids) > shown else ""
    return f"agents {names}{more} vote"
