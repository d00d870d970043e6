"""Checks that need the whole config, shared by ``conclave run`` and ``conclave validate``.

The schema checks each value on its own; these check values against each other (how many
agents there are against the visibility, a scripted vote against the agents it can name).
``run`` applies them to the config after its flags and mode overrides, ``validate`` to the
file as written; both call :func:`check_runnable`, so the two never disagree about a config.
"""

from __future__ import annotations

from config.limits import MAX_ALL_TO_ALL
from config.loader import ConfigError
from config.schema import ConclaveConfig, parse_visibility
from config.schema.backends import ScriptedBackendConfig, voted_agent_number

__all__ = ["check_runnable", "is_all_to_all", "problems"]


def is_all_to_all(visibility: str, agents: int) -> bool:
    """Whether every agent sees every other: ``all``, or islands at least as large as the run
    (one island holds everyone)."""
    kind, k = parse_visibility(visibility)
    return kind == "all" or (kind == "islands" and k >= agents)


def problems(config: ConclaveConfig) -> list[str]:
    """Everything that would make this config fail or misbehave as a run, one line each."""
    found: list[str] = []
    n = len(config.agents)
    visibility = config.orchestrator.visibility
    if n > MAX_ALL_TO_ALL and is_all_to_all(visibility, n):
        found.append(
            f"visibility {visibility!r} with {n:,} agents is all-to-all: every answer would "
            f"go to every agent (~{n * n:,} updates), which is limited to {MAX_ALL_TO_ALL} "
            "agents; use visibility ring or islands:K with K < the number of agents "
            "(--visibility, or orchestrator.visibility in the config)"
        )
    wrong: dict[int, list[str]] = {}
    for agent in config.agents:
        if not isinstance(agent.backend, ScriptedBackendConfig):
            continue
        k = voted_agent_number(agent.backend.vote)
        if k is not None and k > n:
            wrong.setdefault(k, []).append(agent.id)
    for k, voters in sorted(wrong.items()):
        found.append(
            f"{_agents(voters)} for agent{k}, but the run has {n} agent{'' if n == 1 else 's'} "
            f"(agent1 to agent{n}, in config order); vote for one of them, best, or self"
        )
    return found


def check_runnable(config: ConclaveConfig, *, source: str | None = None) -> None:
    """Raise :class:`ConfigError` listing every problem :func:`problems` finds, after
    ``source:`` (the config file's path) when the config came from a file."""
    found = problems(config)
    if found:
        raise ConfigError((f"{source}: " if source else "") + "; ".join(found))


def _agents(ids: list[str], shown: int = 3) -> str:
    """``agent 'a' votes`` or ``agents 'a', 'b' and 7 more vote``: short at any count."""
    if len(ids) == 1:
        return f"agent {ids[0]!r} votes"
    names = ", ".join(repr(i) for i in ids[:shown])
    more = f" and {len(ids) - shown:,} more" if len(ids) > shown else ""
    return f"agents {names}{more} vote"
