"""Backend sections: which LLM an agent talks to, and how."""

from __future__ import annotations

import enum
import re
from typing import Any, Literal

import attrs

from conclave.config.limits import MAX_ANSWERS, MAX_LATENCY_S
from conclave.config.schema.anthropic import AnthropicBackendConfig
from conclave.config.schema.checks import InvalidValue, fraction, seconds, whole
from conclave.config.schema.endpoint import Price
from conclave.config.schema.openai import OpenAIBackendConfig
from conclave.config.schema.paor import SubAgentKind

__all__ = [
    "BACKEND_TYPES",
    "AnthropicBackendConfig",
    "BackendConfig",
    "Misbehaviour",
    "OpenAIBackendConfig",
    "ScriptedBackendConfig",
    "ScriptedSubTask",
    "ToolStep",
    "voted_agent_number",
]


class Misbehaviour(enum.Enum):
    NO_CALL = "no_call"
    BOTH_CALLS = "both_calls"
    UNKNOWN_TOOL = "unknown_tool"
    VOTE_WITHOUT_ANSWER = "vote_without_answer"
    DUPLICATE = "duplicate"
    """Gives the first answer shown as its own: no failure, it counts as a vote for it."""
    MALFORMED = "malformed"
    ERROR = "error"
    HANG = "hang"


_VOTE = re.compile(r"^(best|self|agent([1-9][0-9]{0,5}))$")


def _check_vote(_inst: object, _attr: attrs.Attribute[str], value: str) -> None:
    """Anything else would pass loading and then fail every vote the agent casts."""
    if not isinstance(value, str) or not _VOTE.match(value):
        raise ValueError(
            f"vote {value!r} is not one of: best, self, or an anonymous id such as agent2"
        )


def voted_agent_number(vote: str) -> int | None:
    """K for a vote ``agentK`` (the K-th agent in config order), else ``None``."""
    match = _VOTE.match(vote)
    return int(match.group(2)) if match and match.group(2) else None


_TOOL_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,63}$")
_MCP_TOOL_NAME = re.compile(r"^mcp__[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_))*__[A-Za-z0-9_-]+$")
"""``mcp__<server>__<tool>``: a server name as config.schema.mcp takes it, and a tool name as
MCP servers give them (``get-sum``, ``Get-Sum``) that an LLM API accepts (actors.mcp.tools
offers no other)."""
_MCP_TOOL_MAX = 64
_WORKFLOW = ("new_answer", "vote")


def _check_tool(_inst: object, _attr: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not (
        _MCP_TOOL_NAME.match(value) and len(value) <= _MCP_TOOL_MAX
        if value.startswith("mcp__")  # the executor sends every mcp__ name to an MCP server
        else _TOOL_NAME.match(value)
    ):
        raise ValueError(
            f"tool {value!r} is not a tool name: a built-in tool is lower case letters, digits "
            "and _ (read_file); an MCP tool is mcp__<server>__<tool>, at most 64 letters, "
            "digits, _ or - (mcp__every__get-sum)"
        )
    if value in _WORKFLOW:
        raise ValueError(
            f"tool {value!r} is a workflow call, which the script makes itself after its "
            "tool steps; list only other tools (read_file, write_file, run_shell, ...)"
        )


@attrs.frozen(kw_only=True)
class ToolStep:
    """One tool call a scripted agent makes, one per LLM call, before its reply.

    In string arguments, ``{agent}`` becomes the agent's configured id, ``{me}`` its
    anonymous id (``agent2``) and ``{revision}`` the number of the answer it is working on.
    """

    tool: str = attrs.field(validator=_check_tool)
    arguments: dict[str, Any] = attrs.field(
        factory=dict, validator=attrs.validators.instance_of(dict), hash=False
    )


def _check_text(_inst: object, attr: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise InvalidValue(
            f"{attr.name!r} must be a non-empty string; got {value!r}",
            expected="a non-empty string",
        )


@attrs.frozen(kw_only=True)
class ScriptedSubTask:
    """A step a scripted PAOR agent delegates to a sub-agent (``loop: paor``), and the tool
    steps that sub-agent makes."""

    id: str = attrs.field(validator=_check_text)
    delegate: SubAgentKind = attrs.field(validator=attrs.validators.instance_of(SubAgentKind))
    task: str = attrs.field(validator=_check_text)
    depends_on: tuple[str, ...] = ()
    """Ids of the sub-tasks it waits for."""
    tool_steps: tuple[ToolStep, ...] = ()


@attrs.frozen(kw_only=True)
class ScriptedBackendConfig:
    """The embedded, offline backend; also the policy it plays."""

    type: Literal["scripted"] = "scripted"
    seed: int = attrs.field(default=0, validator=whole(0, 2**63 - 1))
    latency: float = attrs.field(default=0.0, validator=seconds(high=MAX_LATENCY_S, zero=True))
    """Seconds per call."""
    jitter: float = attrs.field(default=0.0, validator=fraction)
    """Fraction of ``latency`` added or removed at random (0.5 is ±50 %)."""
    answers: int = attrs.field(default=1, validator=whole(1, MAX_ANSWERS))
    """How many answers to give before voting."""
    vote: str = attrs.field(default="best", validator=_check_vote)
    """``best`` (highest deterministic score), ``self``, or an anonymous id like ``agent2``
    (which must name a configured agent: see :mod:`config.validation`)."""
    answer_text: str | None = None
    """Fixed answer content instead of composed text (to script ties and duplicates)."""
    misbehave: Misbehaviour | None = None
    misbehave_calls: int = attrs.field(default=1_000_000, validator=whole(0, 1_000_000))
    """How many calls misbehave (counting from the first) before the policy behaves."""
    error_rate: float = attrs.field(default=0.0, validator=fraction)
    malformed_rate: float = attrs.field(default=0.0, validator=fraction)
    hang_rate: float = attrs.field(default=0.0, validator=fraction)
    tool_steps: tuple[ToolStep, ...] = ()
    """Tool calls made, in order, before each ``new_answer``."""
    subtasks: tuple[ScriptedSubTask, ...] = ()
    """With ``loop: paor``: steps the plan delegates to sub-agents, before its own."""
    vote_tool_steps: tuple[ToolStep, ...] = ()
    """Tool calls made, in order, before each ``vote``."""
    presentation_tool_steps: tuple[ToolStep, ...] = ()
    """Tool calls made, in order, before the presentation's text.

    Which step comes next is read from the transcript (the step results already in it), so
    a restarted agent goes on where it was. A step whose tool is not offered (plan mode
    offers no write tool) is left out, as a model would not call it, unless
    ``call_unoffered_tools``."""
    call_unoffered_tools: bool = attrs.field(
        default=False, validator=attrs.validators.instance_of(bool)
    )
    """Make every tool step even when its tool is not offered, as a misbehaving model might
    (the specs that show plan mode refuses every write)."""
    paor_question: str = attrs.field(default="", validator=attrs.validators.instance_of(str))
    """With ``loop: paor``: what the first reflection asks the user (``needs_user``) until
    an answer is in the round's transcript; empty: it asks nothing. How a spec makes a PAOR
    run pause on a question (``--on-question pause``, exit 4, ``conclave resume``)."""
    paor_stuck: int = attrs.field(default=0, validator=whole(0, 100))
    """With ``loop: paor``: how many of a round's first reflections say it is stuck. The
    first forces a new plan; a second asks the user for another approach."""
    price: Price | None = None
    """Dollars per million of the tokens its replies report, as an HTTP backend's ``price``:
    the calls cost nothing, but a priced scripted agent lets ``--max-cost``, cost columns
    and dollar figures be tried offline."""


BackendConfig = ScriptedBackendConfig | OpenAIBackendConfig | AnthropicBackendConfig
"""A tagged union on ``type``."""

BACKEND_TYPES: dict[str, type[BackendConfig]] = {
    "scripted": ScriptedBackendConfig,
    "openai": OpenAIBackendConfig,
    "anthropic": AnthropicBackendConfig,
}
