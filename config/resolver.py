"""One run configuration from flags, a config file and mode state: the one resolver.

Every front end (``conclave run``, ``conclave batch``, the REPL, ``conclave serve``) turns
what it was told into a run's config here, so each check and each message exists once:

1. :func:`resolve`: the config every run of the front end starts from.

   - Which file: ``--config PATH``, else the first that exists of the project's
     ``./.conclave/config.yaml`` and the user's config (:mod:`config.discovery`), else the
     scripted default; ``--agents N`` asks for the scripted default whatever files exist,
     and cannot be combined with ``--config``.
   - The file loaded (:mod:`config.loader`), then edited by the flags: ``--visibility``,
     ``--in-flight-policy``, ``--timeout``, ``--context``, ``--model``,
     ``--permission-mode``.
   - ``--max-cost`` refused when no agent has a price (nothing would count against it).

2. :meth:`ResolvedConfig.for_modes`: the config one run uses. The mode table
   (:func:`config.modes.apply_modes`), applied once, to the config before any mode; then an
   explicit ``--final-answer-strategy`` over the table's; then the readiness checks, on what
   will run: the panel is runnable (:func:`config.validation.check_runnable`, the checks
   ``conclave validate`` makes) and some agent has its key
   (:func:`config.keys.check_some_agent_has_a_key`).

A front end whose modes are fixed when it starts (run, batch) calls both once per mode. One
whose modes change while it runs (the REPL's toggles, each ``start_run`` of a serve client)
checks its starting modes when it starts, and calls :meth:`~ResolvedConfig.for_modes` again
for each run.

What is wrong is raised, never printed: :class:`UsageError` for a flag (or flags that
contradict each other), :class:`~config.problems.ConfigError` for the file or the config a
run would use. Each front end prints either after its own prefix, and exits 2.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from conclave.config.discovery import ConfigOrigin, FoundConfig, discover_config
from conclave.config.keys import check_some_agent_has_a_key
from conclave.config.modes import AgentMode, CollaborationMode, ModeState, UnknownAgent, apply_modes
from conclave.config.schema import (
    ConclaveConfig,
    FinalAnswerStrategy,
    InFlightPolicy,
    LoopKind,
    default_config,
)
from conclave.config.schema.agents import price_of
from conclave.config.schema.context import ContextPath, parse_context_flag
from conclave.config.schema.endpoint import CHARS_PER_TOKEN_ESTIMATE, HttpBackendConfig
from conclave.config.schema.openai import OpenAIBackendConfig
from conclave.config.schema.permissions import PermissionMode
from conclave.config.validation import check_runnable
from conclave.config.wording import listed, plural

__all__ = [
    "DEFAULT_AGENTS",
    "ResolvedConfig",
    "RunFlags",
    "UsageError",
    "resolve",
    "with_model",
]

DEFAULT_AGENTS = 3
"""The scripted default's agents when ``--agents`` does not say."""
_SCRIPTED_DEFAULT = FoundConfig(path=None, origin=ConfigOrigin.DEFAULT)


class UsageError(Exception):
    """A flag or its value is wrong, or two flags contradict each other; the message names
    the flag and what to do."""


@attrs.frozen(kw_only=True)
class RunFlags:
    """What the shared run flags (:func:`config.flags.add_run_flags`) say; a flag not given
    is ``None`` (or its default)."""

    config: str | None = None
    agents: int | None = None
    agent_mode: AgentMode = AgentMode.MULTI
    agent: str | None = None
    refinement: bool = True
    collaboration: CollaborationMode = CollaborationMode.DEFAULT
    collaboration_given: bool = False
    """Whether ``--mode`` was given (else the config's ``mode:`` may name the mode)."""
    agent_mode_given: bool = False
    """Whether ``--agent-mode`` or ``--agent`` was given."""
    refinement_given: bool = False
    strategy: FinalAnswerStrategy | None = None
    visibility: str | None = None
    context: tuple[str, ...] = ()
    in_flight_policy: InFlightPolicy | None = None
    loop: LoopKind | None = None
    """``--loop``: how every agent's answer rounds run, over each agent's ``loop:``."""
    timeout: float | None = None
    model: str | None = None
    permission_mode: PermissionMode | None = None
    """``--permission-mode``: wins over the config's ``permissions.mode``."""
    max_cost: float | None = None
    """A budget in dollars (``conclave run``'s for the run, ``conclave batch``'s for the
    batch): refused when nothing has a price."""

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RunFlags:
        """The flags a parser read; one a front end does not take reads as not given
        (``conclave serve`` takes no mode flags: each client's run names its own)."""

        def given(name: str) -> Any:
            return getattr(args, name, None)

        strategy = given("final_answer_strategy")
        policy = given("in_flight_policy")
        permission_mode = given("permission_mode")
        loop = given("loop")
        return cls(
            config=given("config"),
            agents=given("agents"),
            agent_mode=AgentMode(given("agent_mode") or AgentMode.MULTI.value),
            agent=given("agent"),
            refinement=given("refinement") != "off",
            collaboration=CollaborationMode(given("mode") or CollaborationMode.DEFAULT.value),
            collaboration_given=given("mode") is not None,
            agent_mode_given=given("agent_mode") is not None or given("agent") is not None,
            refinement_given=given("refinement") is not None,
            strategy=FinalAnswerStrategy(strategy) if strategy is not None else None,
            visibility=given("visibility"),
            context=tuple(given("context") or ()),
            in_flight_policy=InFlightPolicy(policy) if policy is not None else None,
            loop=LoopKind(loop) if loop is not None else None,
            timeout=given("timeout"),
            model=given("model"),
            permission_mode=(
                PermissionMode(permission_mode) if permission_mode is not None else None
            ),
            max_cost=given("max_cost"),
        )

    def with_config_mode(self, config: ConclaveConfig) -> RunFlags:
        """These flags with the config's top-level ``mode:`` where ``--mode`` was not given."""
        if self.collaboration_given or config.mode is None:
            return self
        return attrs.evolve(self, collaboration=config.mode)

    def mode_states(self, rows: Sequence[tuple[AgentMode, bool]] | None = None) -> list[ModeState]:
        """The mode state of each row of the mode table a front end runs, as (agent mode,
        refinement); by default the one the flags name. ``--agent`` picks the agent of the
        single-mode rows, so it needs one."""
        wanted = list(rows) if rows is not None else [(self.agent_mode, self.refinement)]
        if self.agent is not None and all(mode is not AgentMode.SINGLE for mode, _ in wanted):
            raise UsageError("--agent picks the agent of single mode; add --agent-mode single")
        return [
            ModeState(
                collaboration=self.collaboration,
                agent_mode=mode,
                active_agent=self.agent if mode is AgentMode.SINGLE else None,
                refinement=refinement,
            )
            for mode, refinement in wanted
        ]

    def mode_state(self) -> ModeState:
        """The one mode state the flags name."""
        [state] = self.mode_states()
        return state

    def over(self, restored: ModeState, *, mine: ModeState | None = None) -> ModeState:
        """``restored`` (a resumed session's modes) with what these flags gave put over it,
        each of collaboration mode, agent mode (with its agent) and refinement alone;
        ``mine``: the modes the flags made (default: :meth:`mode_state`)."""
        mine = self.mode_state() if mine is None else mine
        state = restored
        if self.collaboration_given:
            state = attrs.evolve(state, collaboration=mine.collaboration)
        if self.agent_mode_given:
            state = attrs.evolve(state, agent_mode=mine.agent_mode, active_agent=mine.active_agent)
        if self.refinement_given:
            state = attrs.evolve(state, refinement=mine.refinement)
        return state


@attrs.frozen(kw_only=True)
class ResolvedConfig:
    """The config every run of a front end starts from (the file and the flags, before any
    mode), and how to finish it for one run's modes. Build it with :func:`resolve`; a test
    or an embedding that has its config in hand may build it directly."""

    base: ConclaveConfig
    found: FoundConfig = _SCRIPTED_DEFAULT
    """Where the config came from (``path`` ``None``: the scripted default)."""
    strategy: FinalAnswerStrategy | None = None
    """``--final-answer-strategy``: wins over the mode table's."""
    unpriced: tuple[str, ...] = ()
    """With ``--max-cost``: the agents whose calls it does not count."""
    unmetered: tuple[str, ...] = ()
    """With ``--max-cost``: the priced agents whose server is asked for no usage
    (``stream_usage: false``), whose calls it counts at an estimate."""

    @property
    def source(self) -> str | None:
        """The config file's path as messages name it; ``None`` for the scripted default."""
        return str(self.found.path) if self.found.path is not None else None

    def for_modes(self, state: ModeState, *, timeout: float | None = None) -> ConclaveConfig:
        """The config of a run in ``state`` (with ``timeout``, a run's own whole-run timeout
        over the config's): the mode table once, the explicit strategy, and the readiness
        checks on the result. Raises :class:`~config.modes.UnknownAgent` when single mode
        names an agent the config does not have, and :class:`~config.problems.ConfigError`
        when the config could not run (every problem, naming the file)."""
        config = self.base
        if timeout is not None:
            config = _with_orchestrator(config, run_timeout=timeout)
        config = apply_modes(config, state)
        if self.strategy is not None:
            config = _with_orchestrator(config, final_answer_strategy=self.strategy)
        check_runnable(config, source=self.source)
        check_some_agent_has_a_key(config, source=self.source)
        return config

    def for_flags(self, state: ModeState) -> ConclaveConfig:
        """:meth:`for_modes` for a mode state the flags named: an unknown agent is
        ``--agent``'s."""
        try:
            return self.for_modes(state)
        except UnknownAgent as exc:
            raise UsageError(f"--agent: {exc}") from None

    def where(self) -> str:
        """Where the config came from, for a welcome line: ``config x.yaml``, ``config
        .conclave/config.yaml (this directory's .conclave/config.yaml)``, or the default."""
        if self.found.path is None:
            return "the scripted default (no config file; offline, no API key needed)"
        if self.found.origin is ConfigOrigin.FLAG:
            return f"config {self.found.path}"
        return f"config {self.found.path} ({self.found.origin.value})"

    def source_note(self, agents: int) -> str | None:
        """A line for stderr saying which config a run of ``agents`` agents uses, when the
        command line did not name it: a file that was found, or the scripted default."""
        if self.found.origin is ConfigOrigin.FLAG:
            return None
        if self.found.path is not None:
            return self.found.describe()
        return (
            f"no --config given; running {plural(agents, 'scripted agent')} "
            "(offline, no API key needed)"
        )

    def headless_permission_note(self) -> str | None:
        """For a headless front end whose permission mode asks: nobody will be asked, so
        such calls are refused (the agent is told); ``None`` with ``bypass``."""
        mode = self.base.permissions.mode
        if mode is PermissionMode.BYPASS:
            return None
        return (
            f"permission mode {mode.value}: nobody can approve a call in a headless run, so a "
            "call that must ask is refused and the agent told; allow calls with "
            "permissions.allow rules, or pass --permission-mode bypass"
        )

    def max_cost_note(self) -> str | None:
        """With ``--max-cost``, a line naming the agents whose calls it does not count, and
        those whose calls it counts at an estimate; ``None`` when it counts every call."""
        notes = []
        if self.unpriced:
            notes.append(
                "--max-cost counts only priced calls; the calls of "
                f"{plural(len(self.unpriced), 'agent')} without a price "
                f"({listed(self.unpriced)}) are not counted"
            )
        if self.unmetered:
            notes.append(
                f"--max-cost cannot read what the calls of {plural(len(self.unmetered), 'agent')} "
                f"({listed(self.unmetered)}) use: stream_usage is false, so the server reports "
                f"no usage; they count at an estimate of a token per "
                f"{CHARS_PER_TOKEN_ESTIMATE} characters sent or received"
            )
        return "; ".join(notes) or None


def resolve(flags: RunFlags) -> ResolvedConfig:
    """The config every run starts from: the file (given, found, or the scripted default)
    and the flags' edits; see the module docstring. Raises :class:`UsageError` or
    :class:`~config.problems.ConfigError`."""
    if flags.config is not None and flags.agents is not None:
        raise UsageError(
            "--agents applies only to the default scripted agents; drop it or --config"
        )
    found = _SCRIPTED_DEFAULT if flags.agents is not None else discover_config(flags.config)
    if found.path is not None:
        # The loader (YAML) is imported only for a file: the REPL's start-up without one
        # does not pay for it.
        from conclave.config.loader import load_config

        config = load_config(found.path)
    else:
        config = default_config(flags.agents or DEFAULT_AGENTS)
    changes: dict[str, Any] = {}
    if flags.visibility is not None:
        changes["visibility"] = flags.visibility
    if flags.in_flight_policy is not None:
        changes["in_flight_policy"] = flags.in_flight_policy
    if flags.timeout is not None:
        changes["run_timeout"] = flags.timeout
    if flags.context:
        changes["context_paths"] = _merged_context(
            config.orchestrator.context_paths, _context_paths(flags.context)
        )
    config = _with_orchestrator(config, **changes)
    if flags.model is not None:
        config = with_model(config, flags.model)
    if flags.permission_mode is not None:
        permissions = attrs.evolve(config.permissions, mode=flags.permission_mode)
        config = attrs.evolve(config, permissions=permissions)
    if flags.loop is not None:
        agents = tuple(attrs.evolve(agent, loop=flags.loop) for agent in config.agents)
        config = attrs.evolve(config, agents=agents)
    unpriced: tuple[str, ...] = ()
    unmetered: tuple[str, ...] = ()
    if flags.max_cost is not None:
        unpriced = _unpriced(config)
        unmetered = tuple(
            agent.id
            for agent in config.agents
            if isinstance(agent.backend, OpenAIBackendConfig)
            and not agent.backend.stream_usage
            and price_of(agent) is not None
        )
    return ResolvedConfig(
        base=config, found=found, strategy=flags.strategy, unpriced=unpriced, unmetered=unmetered
    )


def with_model(config: ConclaveConfig, model: str) -> ConclaveConfig:
    """``--model``: every agent that talks to a model uses ``model`` (scripted agents have
    none and are left as they are)."""
    if not any(isinstance(agent.backend, HttpBackendConfig) for agent in config.agents):
        raise UsageError(
            "--model: no agent in this config talks to a model (every backend is scripted); "
            "drop --model, or pass a --config with openai or anthropic agents"
        )
    agents = tuple(
        attrs.evolve(agent, backend=attrs.evolve(agent.backend, model=model))
        if isinstance(agent.backend, HttpBackendConfig)
        else agent
        for agent in config.agents
    )
    return attrs.evolve(config, agents=agents)


def _unpriced(config: ConclaveConfig) -> tuple[str, ...]:
    """``--max-cost`` counts the calls of agents whose backend has a ``price``: refuse a
    budget nothing counts against; else the agents it does not cover."""
    unpriced = tuple(agent.id for agent in config.agents if price_of(agent) is None)
    if len(unpriced) == len(config.agents):
        raise UsageError(
            "--max-cost: no agent's backend has a price, so nothing would count against the "
            "budget; add price: {input_per_mtok: ..., output_per_mtok: ...} to the backend "
            "sections (a scripted one's is pretend, to try the limit offline), or drop --max-cost"
        )
    return unpriced


def _context_paths(values: Sequence[str]) -> tuple[ContextPath, ...]:
    try:
        return tuple(parse_context_flag(value) for value in values)
    except ValueError as exc:
        raise UsageError(f"--context: {exc}") from None


def _merged_context(
    configured: Sequence[ContextPath], given: Sequence[ContextPath]
) -> tuple[ContextPath, ...]:
    """The config's context paths, then the flags' new ones. A flag naming a configured path
    sets its permission (a flag wins over the file, as everywhere; its protected paths stay):
    appended, the first of the two would have decided silently. One path given by two flags
    with both permissions is refused."""
    by_flag: dict[Path, ContextPath] = {}
    for entry in given:
        seen = by_flag.get(entry.path)
        if seen is not None and seen.permission is not entry.permission:
            raise UsageError(
                f"--context: {entry.path} is given both read-only and writable; give it once: "
                "PATH for read-only, PATH:w to let the final presentation write it"
            )
        by_flag[entry.path] = entry
    merged = [
        attrs.evolve(path, permission=by_flag.pop(path.path).permission)
        if path.path in by_flag
        else path
        for path in configured
    ]
    return (*merged, *by_flag.values())


def _with_orchestrator(config: ConclaveConfig, **changes: Any) -> ConclaveConfig:
    if not changes:
        return config
    return attrs.evolve(config, orchestrator=attrs.evolve(config.orchestrator, **changes))
