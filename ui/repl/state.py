"""What the REPL's screen shows, and the mode toggles' rules.

One :class:`ReplState` per session, read by the layout at each redraw and written on the
UI's thread only: by the key bindings, and by the service (on the runtime's thread), which
hands each change to the UI's thread (:data:`ui.repl.service.Post`). So no lock is needed: a
write is never interleaved with a redraw, and the run never waits for the screen.

The toggles refuse while agents execute: a run's config is fixed when it starts, and a
bar that changed mid-run would lie about the run on screen. Each refusal returns the
sentence the person sees instead.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
from prompt_toolkit.formatted_text import StyleAndTextTuples

from conclave.config.modes import AgentMode, CollaborationMode, ModeSource, ModeState
from conclave.config.schema import AgentConfig, ScriptedBackendConfig
from conclave.config.schema.permissions import PermissionMode

if TYPE_CHECKING:  # the runtime is loaded after the prompt is up (start-up time)
    from conclave.actors.events.view import RunView
    from conclave.actors.human.run_approval import RunApprovalRequest
    from conclave.actors.run.result import RunResult
    from conclave.actors.run.turn import Turn
    from conclave.ui.repl.live import RunSnapshot

__all__ = [
    "BUSY",
    "DIALOG_ROWS",
    "Dialog",
    "OverrideRow",
    "OverrideWindow",
    "ReplState",
    "SessionChoice",
    "UsageTotals",
    "model_of",
]

BUSY = (
    "modes and the active agent cannot change while agents are working; "
    "press Ctrl+C to cancel the run, or wait for it to end"
)
"""Why a toggle was refused."""

DIALOG_ROWS = 8
"""A dialog's rows on screen at once; a longer list scrolls with the selection."""


def model_of(agent: AgentConfig) -> str:
    """The model an agent's config names (``scripted`` for the embedded backend)."""
    backend = agent.backend
    return "scripted" if isinstance(backend, ScriptedBackendConfig) else backend.model


class Dialog(enum.Enum):
    """What takes the input's place; one at a time."""

    NONE = "none"
    OVERRIDE = "override"
    MODE_PICKER = "mode_picker"
    PLAN = "plan"
    RUN_APPROVAL = "run_approval"
    TOOL_APPROVAL = "tool_approval"
    """A tool call waits for the person (:mod:`ui.repl.tool_approvals`)."""
    CONFIRM_MODE = "confirm_mode"
    """Plan mode asked for while a run works (:mod:`ui.repl.mode_switch`)."""
    QUESTION = "question"
    """An agent's question card (:mod:`ui.repl.questions`)."""
    SESSIONS = "sessions"
    """``/resume``'s picker."""


@attrs.frozen(kw_only=True)
class UsageTotals:
    """What the session's runs have used so far (``/cost``)."""

    runs: int = 0
    llm_calls: int = 0
    input_tokens: int | None = 0
    """``None`` (and ``output_tokens`` too) once some run's servers reported no usage."""
    output_tokens: int | None = 0
    cost_usd: float | None = 0.0
    """``None`` once some run had calls without a price."""

    def add(self, result: RunResult) -> UsageTotals:
        total = result.usage.total
        priced = self.cost_usd is not None and (result.cost_usd is not None or not total.calls)
        return UsageTotals(
            runs=self.runs + 1,
            llm_calls=self.llm_calls + result.llm_calls,
            input_tokens=_sum(self.input_tokens, result.input_tokens),
            output_tokens=_sum(self.output_tokens, result.output_tokens),
            cost_usd=(self.cost_usd or 0.0) + (result.cost_usd or 0.0) if priced else None,
        )


def _sum(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


@attrs.frozen(kw_only=True)
class OverrideRow:
    agent: str
    label: str
    preview: str
    """The answer's first lines."""


@attrs.frozen(kw_only=True)
class OverrideWindow:
    """The vote is over and the run waits (timer paused) for Ctrl+O or Enter."""

    winner: str
    label: str
    tally: dict[str, int]
    rows: tuple[OverrideRow, ...]
    """Every agent with an answer, the winner first."""


@attrs.frozen(kw_only=True)
class SessionChoice:
    """A row of ``/resume``'s picker."""

    id: str
    name: str
    """The first prompt."""
    detail: str
    """How old, how many turns."""


@attrs.define(kw_only=True)
class ReplState:
    agents: tuple[str, ...]
    """The configured agents, in config order: the tab bar."""
    modes: ModeState = attrs.Factory(ModeState)
    """The bar: collaboration mode (``/mode``, Shift+Tab), agent mode, refinement."""

    permission_mode: PermissionMode = PermissionMode.BYPASS
    """What a tool call of the next run asks in (``--permission-mode``, the config's
    ``permissions.mode``, ``/permissions``); the status line shows it unless ``bypass``."""

    running: bool = False
    status: str = ""
    """What the running turn is ("Running", "Planning", "Executing plan"), or ``""``."""
    live: RunSnapshot | None = None
    """The current (or last) run as its events have shown it, as of the latest snapshot."""
    models: dict[str, str] = attrs.Factory(dict)
    """Agent → the model its config names (the status line, before a reply names one)."""
    priced: bool = True
    """Whether some configured agent's backend has a price; ``False`` (scripted, local
    models): the status line's cost is ``-``, as batch tables show it, never ``$0.0000``."""
    shell_context: list[str] = attrs.Factory(list)
    """Output of ``!`` commands since the last turn: the next turn's task carries it."""
    elapsed: float = 0.0
    """Seconds the current run has counted (paused while a person decides)."""
    override: OverrideWindow | None = None
    history: list[Turn] = attrs.Factory(list)
    """The conversation so far, oldest first: every run sees it, whichever agent is active."""
    last_result: RunResult | None = None
    last_log_dir: Path | None = None
    usage: UsageTotals = attrs.Factory(UsageTotals)
    queued: list[str] = attrs.Factory(list)
    """Turns typed while a run executes, sent in order when it ends."""
    interactive: bool = False
    """Turns go to the interactive agent (``orchestrator.interactive_mode``), which launches
    runs itself; the mode bar says so."""
    run_id: str | None = None
    """The run executing now (the interactive agent's launch), if any."""
    pending_approval: RunApprovalRequest | None = None
    """A run the interactive agent asks to launch, waiting for Approve / Edit / Cancel."""

    after_run: CollaborationMode | None = None
    """The collaboration mode to switch to once the run on screen has stopped (plan mode,
    confirmed while agents worked)."""
    dialog: Dialog = Dialog.NONE
    selected: int = 0
    """The highlighted row of the open dialog."""
    row_number: str = ""
    """The digits typed so far in the open dialog: row 12 is ``1`` then ``2``."""
    notice: str = ""
    """A one-line message under the input (a refusal, an error), until the next key, or
    until the run ends for one said while it worked (:meth:`run_stopped`)."""
    notice_of_run: bool = False
    """:attr:`notice` was said while a run worked: it is about that run."""
    transcript: list[StyleAndTextTuples] = attrs.Factory(list)
    """Every block printed above the prompt, in order (``/clear`` forgets them)."""
    on_change: Callable[[], None] = lambda: None
    """Asks for a redraw (the application's ``invalidate``)."""

    session_id: str | None = None
    """The session this conversation is recorded in, once it has one."""
    session_choices: tuple[SessionChoice, ...] = ()
    """``/resume``'s rows, most recently used first."""
    mode_changed: Callable[[ModeState, ModeSource], None] = lambda modes, source: None
    """Told each change of :attr:`modes` and who made it (the session records it)."""
    changing_by: ModeSource = ModeSource.COMMAND
    """Who is changing the modes now: keys and clicks set :attr:`ModeSource.SHORTCUT`
    while their toggle runs."""

    # -- derived ------------------------------------------------------------------------

    @property
    def view(self) -> RunView | None:
        """The current (or last) run's view, as of the latest snapshot."""
        return self.live.view if self.live is not None else None

    @property
    def active_agent(self) -> str:
        return self.modes.active_agent or self.agents[0]

    @property
    def collaboration(self) -> CollaborationMode:
        return self.modes.collaboration

    @property
    def plan_mode(self) -> bool:
        return self.modes.plan_mode

    # -- toggles: each returns why it was refused, or None ---------------------------------

    def toggle_plan_mode(self) -> str | None:
        """Shift+Tab: plan mode on, or back to the default collaboration mode."""
        new = CollaborationMode.DEFAULT if self.plan_mode else CollaborationMode.PLAN
        return self.set_collaboration(new)

    def set_collaboration(self, mode: CollaborationMode) -> str | None:
        if self.running:
            return BUSY
        self._set_modes(attrs.evolve(self.modes, collaboration=mode))
        return None

    def toggle_agent_mode(self) -> str | None:
        if self.running:
            return BUSY
        single = self.modes.agent_mode is AgentMode.SINGLE
        mode = AgentMode.MULTI if single else AgentMode.SINGLE
        self._set_modes(attrs.evolve(self.modes, agent_mode=mode))
        return None

    def toggle_refinement(self) -> str | None:
        if self.running:
            return BUSY
        self._set_modes(attrs.evolve(self.modes, refinement=not self.modes.refinement))
        return None

    def select_agent(self, agent: str) -> str | None:
        """Make ``agent`` the one single-agent mode runs (a tab's key or click)."""
        if self.running:
            return BUSY
        if agent not in self.agents:
            return f"no agent {agent!r}; configured agents: {', '.join(self.agents)}"
        if self.modes.agent_mode is not AgentMode.SINGLE:
            return "every agent runs in multi-agent mode; press Alt+A for single-agent mode first"
        self._set_modes(attrs.evolve(self.modes, active_agent=agent))
        return None

    def select_neighbour(self, step: int) -> str | None:
        """The tab ``step`` places right (negative: left) of the active one, wrapping."""
        index = self.agents.index(self.active_agent)
        return self.select_agent(self.agents[(index + step) % len(self.agents)])

    def _set_modes(self, modes: ModeState) -> None:
        if modes != self.modes:
            self.modes = modes
            self.mode_changed(modes, self.changing_by)

    def tell(self, notice: str) -> None:
        self.notice = notice
        self.notice_of_run = self.running
        self.on_change()

    def run_stopped(self) -> None:
        """The run on screen has stopped (called after :attr:`running` went ``False``): a
        notice said while it worked ("correction sent...", a toggle refused, "cancelling the
        run") was about it, and would read as current if it stayed; it goes. One said since
        stays."""
        if self.notice_of_run:
            self.notice, self.notice_of_run = "", False
            self.on_change()
