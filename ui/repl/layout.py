"""The REPL's screen, top to bottom: live progress, the override hint, queued turns, the open
dialog, the agent tabs, the mode bar, the input, the status line and a notice line.

The application is not full-screen: answers are printed above it into the terminal's
scrollback (:meth:`ui.repl.app.Repl.print`), and this layout is the few lines at the
bottom. Every part is a function of :class:`~ui.repl.state.ReplState`, read at each redraw.
Toggles and tabs carry mouse handlers, so a click does what their key does. A key redraws
the screen at once, so nothing here may cost in proportion to the run: the progress block is
drawn once per run snapshot (at most every 50 ms) and reused by the frames in between.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from prompt_toolkit.application.current import get_app
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.layout import (
    ConditionalContainer,
    Float,
    FloatContainer,
    HSplit,
    Layout,
    Window,
)
from prompt_toolkit.layout.controls import BufferControl, FormattedTextControl
from prompt_toolkit.layout.dimension import Dimension
from prompt_toolkit.layout.menus import CompletionsMenu
from prompt_toolkit.layout.processors import BeforeInput
from prompt_toolkit.mouse_events import MouseEvent, MouseEventType
from prompt_toolkit.widgets import SearchToolbar

from conclave.config.modes import AgentMode, CollaborationMode
from conclave.config.schema.permissions import PermissionMode
from conclave.ui.repl.plan_steps import plan_steps_text, shows_plan_steps
from conclave.ui.repl.state import DIALOG_ROWS, Dialog, ReplState

if TYPE_CHECKING:
    from conclave.ui.repl.app import Repl

__all__ = [
    "MODE_DESCRIPTIONS",
    "PROMPT",
    "ProgressBlock",
    "build_layout",
    "dialog_span",
    "dialog_text",
    "mode_bar",
    "override_hint",
    "status_line",
    "tab_bar",
]

PROMPT = "> "

MODE_DESCRIPTIONS = {
    CollaborationMode.DEFAULT: "agents answer, vote and present as configured",
    CollaborationMode.PLAN: "agents propose a plan (read-only); you approve it before it runs",
    CollaborationMode.EXECUTE: "agents work without asking, record assumptions, and finish",
}

_MouseHandler = Callable[[MouseEvent], object]


def _on_click(action: Callable[[], object]) -> _MouseHandler:
    def handler(event: MouseEvent) -> object:
        if event.event_type is not MouseEventType.MOUSE_UP:
            return NotImplemented
        action()
        return None

    return handler


def _width() -> int:
    return get_app().output.get_size().columns


def mode_bar(repl: Repl) -> StyleAndTextTuples:
    """Plan mode, agent mode, refinement and the collaboration-mode chip; dimmed while a
    run executes (a click or key then says why instead of changing anything). The chip
    comes first, so a narrow terminal cuts key hints, not modes; the hints are left out
    when the bar would not fit."""
    width = _width()
    fragments = _mode_bar(repl, hints=True)
    if sum(len(f[1]) for f in fragments) > width:
        fragments = _mode_bar(repl, hints=False)
    used = sum(len(f[1]) for f in fragments)
    fragments.append(("class:bar", " " * max(0, width - used)))
    return fragments


def _plan_toggle(repl: Repl) -> Callable[[], str | None]:
    """The plan-mode item's click: through the mode switch, which asks before stopping work."""

    def toggle() -> None:
        repl.mode_switch.toggle_plan_mode()

    return toggle


def _mode_bar(repl: Repl, *, hints: bool) -> StyleAndTextTuples:
    state = repl.state
    busy = state.running

    def item(
        name: str, value: str, on: bool, key: str, toggle: Callable[[], str | None]
    ) -> StyleAndTextTuples:
        click = _on_click(lambda: repl.toggle(toggle))
        value_style = "class:bar.disabled" if busy else ("class:bar.on" if on else "class:bar.off")
        label_style = "class:bar.disabled" if busy else "class:bar"
        hint = f" ({key}) " if hints else " "
        return [
            (label_style, f" {name}: ", click),
            (value_style, value, click),
            ("class:bar.disabled" if busy else "class:bar.key", hint, click),
        ]

    single = state.modes.agent_mode is AgentMode.SINGLE
    fragments: StyleAndTextTuples = []
    if state.interactive:
        fragments.append(("class:bar.chip", "[interactive]"))
    if state.collaboration is not CollaborationMode.DEFAULT:
        chip = f"class:bar.chip class:bar.chip.{state.collaboration.value}"
        fragments.append((chip, f"[{state.collaboration.value}]"))
    fragments += item(
        "plan mode",
        "on" if state.plan_mode else "off",
        state.plan_mode,
        "shift+tab",
        _plan_toggle(repl),
    )
    fragments.append(("class:bar", "|"))
    fragments += item(
        "agents", "single" if single else "multi", single, "alt+a", state.toggle_agent_mode
    )
    fragments.append(("class:bar", "|"))
    fragments += item(
        "refinement",
        "on" if state.modes.refinement else "off",
        state.modes.refinement,
        "alt+r",
        state.toggle_refinement,
    )
    return fragments


def tab_bar(repl: Repl) -> StyleAndTextTuples:
    """One tab per configured agent; in single-agent mode the active one stands out and the
    others are greyed. As many as fit, then how many more."""
    state = repl.state
    single = state.modes.agent_mode is AgentMode.SINGLE
    active = state.active_agent
    fragments: StyleAndTextTuples = [("class:tab", "agents:")]
    budget = _width() - 20
    used = len("agents:")
    for index, agent in enumerate(state.agents):
        text = f" {agent} "
        if used + len(text) + 1 > budget and index < len(state.agents) - 1:
            fragments.append(("class:tab.inactive", f" +{len(state.agents) - index:,} more"))
            break
        if not single:
            style = "class:tab"
        elif agent == active:
            style = "class:tab.active"
        else:
            style = "class:tab.inactive"

        fragments.append(("", " "))
        fragments.append((style, text, _on_click(_selector(repl, agent))))
        used += len(text) + 1
    hint = "  (alt+left/right)" if single else ""
    fragments.append(("class:tab.inactive", hint))
    return fragments


def _selector(repl: Repl, agent: str) -> Callable[[], None]:
    return lambda: repl.toggle(lambda: repl.state.select_agent(agent))


def _chooser(repl: Repl, index: int) -> Callable[[], None]:
    return lambda: repl.choose(index)


def override_hint(state: ReplState) -> StyleAndTextTuples:
    window = state.override
    if window is None:
        return []
    votes = window.tally.get(window.label, 0)  # the winner's, not every vote cast
    return [
        (
            "class:hint",
            f"Vote complete: {window.winner} won with {window.label} ({votes} vote"
            f"{'' if votes == 1 else 's'}). Press Ctrl+O to override, Enter to continue",
        )
    ]


def dialog_text(repl: Repl) -> StyleAndTextTuples:
    state = repl.state
    window = state.override
    if state.dialog is Dialog.OVERRIDE and window is not None:
        title = "Who presents the final answer? (Enter, a row's number or a click; Esc closes)"
        count = len(window.rows)

        def row(index: int) -> tuple[str, str]:
            found = window.rows[index]
            mark = " (winner)" if found.agent == window.winner else ""
            return f"{found.agent} {found.label}{mark}", found.preview

    elif state.dialog is Dialog.MODE_PICKER:
        title = "Collaboration mode (Enter, a digit or a click; Esc closes)"
        modes = list(CollaborationMode)
        count = len(modes)

        def row(index: int) -> tuple[str, str]:
            current = " (current)" if modes[index] is state.collaboration else ""
            return f"{modes[index].value}{current}", MODE_DESCRIPTIONS[modes[index]]

    elif state.dialog is Dialog.SESSIONS:
        title = "Resume which session? (Enter, a row's number or a click; Esc closes)"
        choices = state.session_choices
        count = len(choices)

        def row(index: int) -> tuple[str, str]:
            return choices[index].name, choices[index].detail

    else:
        return []
    width = _width()
    fragments: StyleAndTextTuples = [("class:dialog.title", title + "\n")]
    first, last = dialog_span(count, state.selected)  # only the rows in view are formatted
    if first:
        fragments.append(("class:dialog.detail", f"   ↑ {first:,} more (Up, Page Up)\n"))
    for index in range(first, last):
        name, detail = row(index)
        style = "class:dialog.selected" if index == state.selected else "class:dialog.row"
        click = _on_click(_chooser(repl, index))
        line = f" {index + 1}. {name}"
        fragments.append((style, line, click))
        rest = max(0, width - len(line) - 4)
        if detail and rest > 8:
            text = detail if len(detail) <= rest else detail[: rest - 1] + "…"
            fragments.append(("class:dialog.detail", "  " + text, click))
        fragments.append(("", "\n"))
    if last < count:
        below = count - last
        fragments.append(("class:dialog.detail", f"   ↓ {below:,} more (Down, Page Down)\n"))
    return fragments


def dialog_span(rows: int, selected: int) -> tuple[int, int]:
    """The rows a dialog shows, ``first`` to ``last`` (exclusive): all of them when they
    fit in :data:`DIALOG_ROWS`, else that many with the selected row in view."""
    if rows <= DIALOG_ROWS:
        return 0, rows
    first = min(max(0, selected - DIALOG_ROWS // 2), rows - DIALOG_ROWS)
    return first, first + DIALOG_ROWS


_WAITING = {
    Dialog.RUN_APPROVAL: "waiting for your approval",
    Dialog.TOOL_APPROVAL: "waiting for your approval",
    Dialog.QUESTION: "waiting for your answer",
}
"""What the live block's headline says, before a run has shown anything, while a dialog waits
for the person (not "starting": nothing starts until they decide)."""


class ProgressBlock:
    """The progress block last drawn, and what it was drawn from: frames between two
    snapshots (a typed key's) reuse it instead of going over every agent again."""

    def __init__(self) -> None:
        self._live: object = None
        self._rest: tuple[object, ...] = ()
        self._fragments: StyleAndTextTuples = []

    def __call__(self, repl: Repl) -> StyleAndTextTuples:
        state = repl.state
        live = state.live
        if live is None:
            doing = _WAITING.get(state.dialog, "starting")
            return [("class:progress.head", f"{state.status} · {doing}\n")]
        rest = (state.status, round(state.elapsed, 1), _width())
        if live is not self._live or rest != self._rest:
            from conclave.ui.repl.render import progress_block  # loaded with the runtime

            self._fragments = progress_block(
                live.progress,
                status=state.status,
                elapsed=state.elapsed,
                width=_width(),
                streams=live.streams,
                streaming=live.streaming,
            )
            self._live, self._rest = live, rest
        return self._fragments


def status_line(state: ReplState) -> StyleAndTextTuples:
    """The model (the active agent's in single-agent mode, else every one configured), the
    context the latest run's largest prompt used, what the session has cost (``-`` when no
    configured backend has a price), and the permission mode unless it is the default
    (``bypass``: nothing asks), as a mode that asks changes what a run does."""
    if state.modes.agent_mode is AgentMode.SINGLE:
        named = [state.models.get(state.active_agent, "?")]
    else:
        named = list(dict.fromkeys(state.models[a] for a in state.agents if a in state.models))
    models = ", ".join(named[:2]) + (f" +{len(named) - 2} more" if len(named) > 2 else "")
    parts = [f"model {models or '?'}"]
    live = state.live
    if live is not None and live.context_tokens:
        parts.append(f"context {live.context_tokens:,} tokens")
    spent = state.usage.cost_usd
    running = live.cost_usd if live is not None and not live.ended else 0.0
    if not state.priced:
        parts.append("cost -")
    elif spent is None or running is None:
        parts.append("cost unknown (unpriced models)")
    else:
        parts.append(f"cost ${spent + running:.4f}")
    if state.permission_mode is not PermissionMode.BYPASS:
        parts.append(f"permissions {state.permission_mode.value}")
    return [("class:status", " · ".join(parts))]


def _queued(state: ReplState) -> StyleAndTextTuples:
    return [
        ("class:queued", "queued: " + " ".join(text.split())[: _width() - 12] + "\n")
        for text in state.queued
    ]


def _lines(
    get: Callable[[], StyleAndTextTuples], when: Callable[[], bool], *, wrap: bool = False
) -> ConditionalContainer:
    """Lines of text, shown while ``when()``; no blank line after the last. Long lines are
    cut at the edge unless ``wrap``."""

    def text() -> StyleAndTextTuples:
        fragments = get()
        if fragments and fragments[-1][1].endswith("\n"):
            last = fragments[-1]
            fragments = [*fragments[:-1], (last[0], last[1][:-1], *last[2:])]
        return fragments

    return ConditionalContainer(
        Window(FormattedTextControl(text), dont_extend_height=True, wrap_lines=wrap),
        filter=Condition(when),
    )


def build_layout(repl: Repl) -> Layout:
    state = repl.state
    progress = ProgressBlock()
    search = SearchToolbar()  # Ctrl+R: prompt-toolkit's reverse search of the history
    prompt_window = Window(
        BufferControl(
            buffer=repl.buffer,
            input_processors=[BeforeInput(PROMPT, "class:prompt")],
            search_buffer_control=search.control,
        ),
        height=Dimension(min=1, max=12),
        dont_extend_height=True,
        wrap_lines=True,
        get_line_prefix=lambda line, wrap: "" if line == 0 and wrap == 0 else "  ",
    )
    body = HSplit(
        [
            _lines(lambda: plan_steps_text(state), lambda: shows_plan_steps(state)),
            _lines(lambda: progress(repl), lambda: state.running),
            _lines(lambda: override_hint(state), lambda: state.override is not None),
            _lines(lambda: _queued(state), lambda: bool(state.queued)),
            _lines(lambda: dialog_text(repl), lambda: state.dialog is not Dialog.NONE),
            repl.extra_dialog(),
            _lines(lambda: tab_bar(repl), lambda: True),
            Window(FormattedTextControl(lambda: mode_bar(repl)), height=1),
            prompt_window,
            search,
            Window(FormattedTextControl(lambda: status_line(state)), height=1),
            _lines(lambda: [("class:notice", state.notice)], lambda: bool(state.notice), wrap=True),
        ]
    )
    root = FloatContainer(
        content=body,
        floats=[
            Float(
                xcursor=True,
                ycursor=True,
                content=CompletionsMenu(max_height=8, scroll_offset=1),
            )
        ],
    )
    return Layout(root, focused_element=prompt_window)
