"""Switching to plan mode while agents work: confirmed, then the work stops.

Shift+Tab, a click on the mode bar or ``/mode plan`` while a run executes (outside plan
mode) opens a card in the input's place: "Switch to plan mode? Work in progress will stop."
Stop and switch cancels the run (its partial result is kept, queued turns are dropped, as
Ctrl+C does) and turns plan mode on once it has stopped; Keep working (or Esc, Ctrl+C)
closes the card and changes nothing. Leaving plan mode is never implicit: only an explicit
action does it (Execute in the plan dialog, Shift+Tab or ``/mode`` when idle, ``--mode``),
and while a run works it is refused as every other mode change is.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import HSplit, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.widgets import Frame

from conclave.config.modes import CollaborationMode
from conclave.ui.repl.choices import choice_fragments
from conclave.ui.repl.protocol import Cancel
from conclave.ui.repl.state import Dialog

if TYPE_CHECKING:
    from conclave.ui.repl.app import Repl

__all__ = ["STOP_WARNING", "ModeSwitch", "SwitchChoice"]

STOP_WARNING = "Switch to plan mode? Work in progress will stop."
STOPPING = "stopping the work: plan mode comes on once it has stopped"


class SwitchChoice(enum.Enum):
    STOP = "Stop the work and switch to plan mode"
    KEEP = "Keep working"


_CHOICES = tuple(SwitchChoice)
_HINT = "Up/Down + Enter, 1-2 or a click to choose; Esc keeps working"


class ModeSwitch:
    """The REPL's way to change the collaboration mode by a key, a click or ``/mode``."""

    def __init__(self, repl: Repl) -> None:
        self.repl = repl
        self.selected = 0
        self.open = False
        self.focus = Window(
            FormattedTextControl(self._choice_fragments, focusable=True, show_cursor=False),
            height=len(_CHOICES),
        )
        self.container = Frame(
            HSplit(
                [
                    Window(FormattedTextControl(STOP_WARNING), height=1),
                    Window(height=1, char="─"),
                    self.focus,
                    Window(FormattedTextControl(_HINT), height=1, style="class:hint"),
                ],
                key_bindings=self._key_bindings(),
            ),
            title="Plan mode",
        )

    def toggle_plan_mode(self) -> None:
        """Shift+Tab or a click on the mode bar (a shortcut, as the session records it)."""
        plan = self.repl.state.plan_mode
        target = CollaborationMode.DEFAULT if plan else CollaborationMode.PLAN
        self.repl.toggle(lambda: self.switch(target))

    def switch(self, mode: CollaborationMode) -> str | None:
        """Change to ``mode`` now, or ask first (plan mode while a run works, the card
        open on return); why it was refused otherwise."""
        state = self.repl.state
        if state.running and mode is CollaborationMode.PLAN and not state.plan_mode:
            self._open()
            return None
        return state.set_collaboration(mode)

    def choose(self, choice: SwitchChoice) -> None:
        if not self.open:
            return
        self._close()
        state = self.repl.state
        if choice is SwitchChoice.KEEP:
            state.tell("still working; plan mode is off")
            return
        if not state.running:  # it ended while the card was open
            state.tell(self.switch(CollaborationMode.PLAN) or "collaboration mode: plan")
            return
        state.after_run = CollaborationMode.PLAN
        state.tell(STOPPING)
        self.repl.send(Cancel())

    def _open(self) -> None:
        repl = self.repl
        self.open, self.selected = True, 0
        repl.plan_container = self.container
        repl.state.dialog = Dialog.CONFIRM_MODE
        repl.app.layout.update_parents_relations()  # the first key must find the card's
        repl.app.layout.focus(self.focus)
        repl.state.on_change()

    def _close(self) -> None:
        repl = self.repl
        self.open = False
        if repl.state.dialog is Dialog.CONFIRM_MODE:
            repl.plan_container = None
            repl.state.dialog = Dialog.NONE
            repl.app.layout.focus(repl.buffer)
        repl.state.on_change()

    def _choice_fragments(self) -> StyleAndTextTuples:
        labels = [choice.value for choice in _CHOICES]
        return choice_fragments(labels, self.selected, lambda index: self.choose(_CHOICES[index]))

    def _key_bindings(self) -> KeyBindings:
        bindings = KeyBindings()

        @bindings.add("up")
        @bindings.add("down")
        @bindings.add("tab")
        def _move(event: KeyPressEvent) -> None:
            self.selected = 1 - self.selected

        @bindings.add("enter")
        def _enter(event: KeyPressEvent) -> None:
            self.choose(_CHOICES[self.selected])

        @bindings.add("1")
        def _stop(event: KeyPressEvent) -> None:
            self.choose(SwitchChoice.STOP)

        @bindings.add("2")
        @bindings.add("escape")
        def _keep(event: KeyPressEvent) -> None:
            self.choose(SwitchChoice.KEEP)

        return bindings
