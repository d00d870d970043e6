"""The ``orchestrator`` section: how agents coordinate and how the final answer is made."""

from __future__ import annotations

import enum
import re

import attrs

from conclave.config.limits import (
    MAX_ANSWERS,
    MAX_PREVIEW_CHARS,
    MAX_QUIET_PERIOD_S,
    MAX_STEPS,
    MAX_TIMEOUT_S,
    MAX_TRIES,
)
from conclave.config.schema.checks import seconds, whole
from conclave.config.schema.context import ContextPath, ContextWritePhase
from conclave.config.schema.interactive import InteractiveModeConfig
from conclave.config.schema.sandbox import SandboxConfig

__all__ = ["FinalAnswerStrategy", "InFlightPolicy", "OrchestratorConfig", "parse_visibility"]


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
    INJECT = "inject"  # rounds with tools: new answers enter at the next step boundary


_VISIBILITY = re.compile(r"^(all|ring|islands:[1-9][0-9]{0,8})$")


def parse_visibility(value: str) -> tuple[str, int]:
    """``all`` → ("all", 0); ``ring`` → ("ring", 0); ``islands:4`` → ("islands", 4)."""
    if not isinstance(value, str) or not _VISIBILITY.match(value):
        raise ValueError(f"visibility {value!r} is not one of: all, ring, islands:K (K >= 1)")
    kind, _, k = value.partition(":")
    return kind, int(k or 0)


_flag = attrs.validators.instance_of(bool)


def _check_visibility(_inst: object, _attr: attrs.Attribute[str], value: str) -> None:
    parse_visibility(value)


@attrs.frozen(kw_only=True)
class OrchestratorConfig:
    final_answer_strategy: FinalAnswerStrategy = FinalAnswerStrategy.WINNER_PRESENT
    max_new_answers_per_agent: int | None = attrs.field(
        default=None, validator=whole(1, MAX_ANSWERS, optional=True)
    )
    skip_voting: bool = attrs.field(default=False, validator=_flag)
    disable_injection: bool = attrs.field(default=False, validator=_flag)
    defer_voting_until_all_answered: bool = attrs.field(default=False, validator=_flag)
    no_final_presentation: bool = attrs.field(default=False, validator=_flag)
    visibility: str = attrs.field(default="all", validator=_check_visibility)
    answer_preview_chars: int = attrs.field(default=2000, validator=whole(1, MAX_PREVIEW_CHARS))
    in_flight_policy: InFlightPolicy = InFlightPolicy.FINISH
    quiet_period: float | None = attrs.field(
        default=0.1, validator=seconds(high=MAX_QUIET_PERIOD_S, optional=True)
    )
    """Hold updates, "you may vote now" and vote resets until no answer has arrived for this
    many seconds (``null``: deliver at once). See DESIGN.md "How a run flows", step 4."""
    first_vote_wait: float | None = attrs.field(
        default=60.0, validator=seconds(high=MAX_TIMEOUT_S, optional=True)
    )
    """Seconds an agent's first "you may vote now" waits for the first answers of the agents
    still answering (``null``: no wait). A vote cast before the last first answer arrives is
    reset by it and cast again; waiting costs no wall time, as the run cannot end before
    that answer is in and voted on. The bound keeps a slow agent from holding the rest."""
    run_timeout: float | None = attrs.field(
        default=None, validator=seconds(high=MAX_TIMEOUT_S, optional=True)
    )
    call_timeout: float | None = attrs.field(
        default=600.0, validator=seconds(high=MAX_TIMEOUT_S, optional=True)
    )
    """Seconds one LLM call may take before it is a failed try (``null``: no limit). A config
    may still say ``round_timeout``, its old name (the loader warns)."""
    max_tries_per_round: int = attrs.field(default=3, validator=whole(1, MAX_TRIES))
    """Failed tries before an agent is excluded: a failed call (after its request's own
    retries, ``max_retries``) or a reply that broke the rules. After a failed call the next
    try waits (exponential back-off with full jitter: up to 1 s, 2 s, 4 s... 30 s)."""
    max_steps_per_round: int = attrs.field(default=25, validator=whole(1, MAX_STEPS))
    """LLM calls one round (or, in a PAOR round, one phase) may make. A round that uses them
    all without finishing ends with a progress report as its answer (the tool calls it made
    and what the last returned) instead of excluding the agent."""
    failing_agent_grace: float | None = attrs.field(
        default=15.0, validator=seconds(high=MAX_TIMEOUT_S, zero=True, optional=True)
    )
    """Once every other live agent is done (voted, or answered and waiting), seconds an agent
    whose calls keep failing still has to succeed; then the run goes on without it (``null``:
    it keeps its tries)."""
    sandbox: SandboxConfig = attrs.field(factory=SandboxConfig)
    """Where agents' ``run_shell`` commands run: ``local`` (default) or ``docker``."""
    context_paths: tuple[ContextPath, ...] = ()
    """The user's files and directories the agents may read (and, with ``permission: write``,
    the final presentation may write); ``--context PATH[:w]`` adds one."""
    context_write_phase: ContextWritePhase = ContextWritePhase.PRESENTATION
    """When writable context paths are written; set by the modes table (config/modes.py)."""
    tools: bool = attrs.field(default=False, validator=_flag)
    """File and shell tools for every agent, each in its own workspace. On whenever context
    paths are given, whatever this says (agents cannot use files they cannot reach); off
    otherwise unless ``true``, so a run that only talks keeps its requests tool-free."""

    interactive_mode: InteractiveModeConfig | None = None
    """An interactive agent that talks with the person and launches runs (the REPL's entry
    point when present and enabled); see :mod:`config.schema.interactive`."""

    @property
    def interactive(self) -> InteractiveModeConfig | None:
        """The interactive mode's settings when it is on, else ``None``."""
        mode = self.interactive_mode
        return mode if mode is not None and mode.enabled else None

    @property
    def agents_have_tools(self) -> bool:
        return self.tools or bool(self.context_paths)
