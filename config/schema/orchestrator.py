"""The ``orchestrator`` section: how agents coordinate and how the final answer is made."""

from __future__ import annotations

import enum
import re

import attrs

from config.schema.checks import positive_or_none

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


_VISIBILITY = re.compile(r"^(all|ring|islands:[1-9][0-9]*)$")


def parse_visibility(value: str) -> tuple[str, int]:
    """``all`` → ("all", 0); ``ring`` → ("ring", 0); ``islands:4`` → ("islands", 4)."""
    if not _VISIBILITY.match(value):
        raise ValueError(f"visibility {value!r} is not one of: all, ring, islands:K (K >= 1)")
    kind, _, k = value.partition(":")
    return kind, int(k or 0)


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
    quiet_period: float | None = attrs.field(default=0.1, validator=positive_or_none)
    """Hold updates, "you may vote now" and vote resets until no answer has arrived for this
    many seconds (``null``: deliver at once). See DESIGN.md "How a run flows", step 4."""
    run_timeout: float | None = attrs.field(default=None, validator=positive_or_none)
    round_timeout: float | None = attrs.field(default=600.0, validator=positive_or_none)
    max_tries_per_round: int = attrs.field(default=3, validator=attrs.validators.ge(1))
