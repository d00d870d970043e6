"""The configuration schema: frozen, keyword-only, validated when loaded, trusted after."""

from __future__ import annotations

import enum
import re
from typing import Any, Literal

import attrs

__all__ = [
    "AgentConfig",
    "ConclaveConfig",
    "FinalAnswerStrategy",
    "InFlightPolicy",
    "Misbehaviour",
    "OrchestratorConfig",
    "ScriptedBackendConfig",
    "default_config",
    "parse_visibility",
]

_ge0 = attrs.validators.ge(0.0)
_fraction = [attrs.validators.ge(0.0), attrs.validators.le(1.0)]


class FinalAnswerStrategy(enum.Enum):
    WINNER_REUSE = "winner_reuse"
    WINNER_PRESENT = "winner_present"
    SYNTHESIZE = "synthesize"


class InFlightPolicy(enum.Enum):
    """What an agent does with a round in flight when new answers reach it."""

    CANCEL = "cancel"
    """Cancel the request now and restart once with everything new."""
    FINISH = "finish"
    """Let the request finish, then discard it and re-run once if it was stale."""


class Misbehaviour(enum.Enum):
    NO_CALL = "no_call"
    BOTH_CALLS = "both_calls"
    UNKNOWN_TOOL = "unknown_tool"
    VOTE_WITHOUT_ANSWER = "vote_without_answer"
    DUPLICATE = "duplicate"
    MALFORMED = "malformed"
    ERROR = "error"
    HANG = "hang"


_VOTE = re.compile(r"^(best|self|agent[1-9][0-9]*)$")


def _check_vote(_inst: object, _attr: attrs.Attribute[str], value: str) -> None:
    """Anything else would pass loading and then fail every vote the agent casts."""
    if not _VOTE.match(value):
        raise ValueError(
            f"vote {value!r} is not one of: best, self, or an anonymous id such as agent2"
        )


@attrs.frozen(kw_only=True)
class ScriptedBackendConfig:
    """The embedded, offline backend; also the policy it plays."""

    type: Literal["scripted"] = "scripted"
    seed: int = 0
    latency: float = attrs.field(default=0.0, validator=_ge0)
    """Seconds per call."""
    jitter: float = attrs.field(default=0.0, validator=_fraction)
    """Fraction of ``latency`` added or removed at random (0.5 is ±50 %)."""
    answers: int = attrs.field(default=1, validator=attrs.validators.ge(1))
    """How many answers to give before voting."""
    vote: str = attrs.field(default="best", validator=_check_vote)
    """``best`` (highest deterministic score), ``self``, or an anonymous id like ``agent2``."""
    answer_text: str | None = None
    """Fixed answer content instead of composed text (to script ties and duplicates)."""
    misbehave: Misbehaviour | None = None
    misbehave_calls: int = attrs.field(default=1_000_000, validator=attrs.validators.ge(0))
    """How many calls misbehave (counting from the first) before the policy behaves."""
    error_rate: float = attrs.field(default=0.0, validator=_fraction)
    malformed_rate: float = attrs.field(default=0.0, validator=_fraction)
    hang_rate: float = attrs.field(default=0.0, validator=_fraction)


BackendConfig = ScriptedBackendConfig

_AGENT_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def _check_agent_id(_inst: object, _attr: attrs.Attribute[str], value: str) -> None:
    if not _AGENT_ID.match(value):
        raise ValueError(f"agent id {value!r} must be 1-64 letters, digits, '_', '.' or '-'")


@attrs.frozen(kw_only=True)
class AgentConfig:
    id: str = attrs.field(validator=_check_agent_id)
    persona: str = ""
    backend: BackendConfig = ScriptedBackendConfig()


_VISIBILITY = re.compile(r"^(all|ring|islands:[1-9][0-9]*)$")


def parse_visibility(value: str) -> tuple[str, int]:
    """``all`` → ("all", 0); ``ring`` → ("ring", 0); ``islands:4`` → ("islands", 4)."""
    if not _VISIBILITY.match(value):
        raise ValueError(f"visibility {value!r} is not one of: all, ring, islands:K (K >= 1)")
    kind, _, k = value.partition(":")
    return kind, int(k or 0)


def _positive_or_none(_inst: object, attr: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and value <= 0:
        raise ValueError(f"{attr.name!r} must be > 0 seconds or null, got {value!r}")


def _check_visibility(_inst: object, _attr: attrs.Attribute[str], value: str) -> None:
    parse_visibility(value)


@attrs.frozen(kw_only=True)
class OrchestratorConfig:
    final_answer_strategy: FinalAnswerStrategy = FinalAnswerStrategy.WINNER_PRESENT
    max_new_answers_per_agent: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.ge(1))
    )
    skip_voting: bool = False
    disable_injection: bool = False
    defer_voting_until_all_answered: bool = False
    no_final_presentation: bool = False
    visibility: str = attrs.field(default="all", validator=_check_visibility)
    answer_preview_chars: int = attrs.field(default=2000, validator=attrs.validators.ge(1))
    in_flight_policy: InFlightPolicy = InFlightPolicy.FINISH
    quiet_period: float | None = attrs.field(default=0.1, validator=_positive_or_none)
    """Hold updates, "you may vote now" and vote resets until no answer has arrived for this
    many seconds (``null``: deliver at once). See DESIGN.md "How a run flows", step 4."""
    run_timeout: float | None = attrs.field(default=None, validator=_positive_or_none)
    round_timeout: float | None = attrs.field(default=600.0, validator=_positive_or_none)
    max_tries_per_round: int = attrs.field(default=3, validator=attrs.validators.ge(1))


@attrs.frozen(kw_only=True)
class ConclaveConfig:
    agents: tuple[AgentConfig, ...] = attrs.field()
    orchestrator: OrchestratorConfig = OrchestratorConfig()

    @agents.validator
    def _check_agents(
        self, _attr: attrs.Attribute[tuple[AgentConfig, ...]], value: tuple[AgentConfig, ...]
    ) -> None:
        if not value:
            raise ValueError("agents must list at least one agent")
        seen: set[str] = set()
        for agent in value:
            if agent.id in seen:
                raise ValueError(f"agent id {agent.id!r} appears twice; ids must be unique")
            seen.add(agent.id)


def default_config(agents: int = 3) -> ConclaveConfig:
    """The no-API-key default: scripted agents with distinct personas and a realistic-looking
    200 ms ±50 % per call, so progress is visible."""
    personas = (
        "a careful engineer",
        "a pragmatic product manager",
        "a skeptical reviewer",
        "a creative designer",
        "a patient teacher",
    )
    width = len(str(agents))
    return ConclaveConfig(
        agents=tuple(
            AgentConfig(
                id=f"scripted{str(i + 1).zfill(width)}",
                persona=personas[i % len(personas)],
                backend=ScriptedBackendConfig(seed=i, latency=0.2, jitter=0.5),
            )
            for i in range(agents)
        )
    )
