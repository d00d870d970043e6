"""The REPL's keys (documented in docs/repl.md).

| key | does |
|---|---|
| Shift+Tab | plan mode on/off |
| Alt+A / Alt+R | single/multi agent; refinement on/off |
| Alt+Left / Alt+Right, Alt+1..9 | the active agent's tab (single-agent mode) |
| Enter | send the line (queued while a run executes); continue with the vote's winner |
| Alt+Enter, Ctrl+J, ``\\`` at the end of a line | a new line |
| Ctrl+O | the override dialog, once the vote is complete |
| Up / Down, Page Up / Page Down | a dialog's rows (a long list scrolls) |
| a row's number (then Enter past 9 rows) | choose that row of a dialog |
| Esc | close a dialog; at an idle prompt, clear the line (it never cancels a run) |
| Ctrl+C | cancel the run; close a dialog; stop a ``!`` command; at an idle prompt, clear the line |
| Ctrl+C twice | at an empty idle prompt: quit |
| Ctrl+R | search the input history (prompt-toolkit's reverse search) |
| Ctrl+D | cancel any run, wait for its log to close, and exit |

Toggles go through :meth:`Repl.toggle`, which shows why a refused one changed nothing.
Dialog keys take precedence while a dialog is open.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prompt_toolkit.filters import Condition, has_completions, is_searching
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

from conclave.ui.repl.protocol import Cancel
from conclave.ui.repl.state import DIALOG_ROWS, Dialog

if TYPE_CHECKING:
    from conclave.ui.repl.app import Repl

__all__ = ["build_keys"]


def build_keys(repl: Repl) -> KeyBindings:
    state = repl.state
    keys = KeyBindings()
    in_dialog = Condition(
        lambda: state.dialog in (Dialog.OVERRIDE, Dialog.MODE_PICKER, Dialog.SESSIONS)
    )
    # While Ctrl+R searches, Enter, Esc and Ctrl+C are the search's (take, leave, leave).
    no_dialog = Condition(lambda: state.dialog is Dialog.NONE) & ~is_searching

    @keys.add("s-tab", filter=no_dialog)
    def _plan_mode(event: KeyPressEvent) -> None:
        repl.mode_switch.toggle_plan_mode()

    @keys.add("escape", "a", filter=no_dialog)
    def _agent_mode(event: KeyPressEvent) -> None:
        repl.toggle(state.toggle_agent_mode)

    @keys.add("escape", "r", filter=no_dialog)
    def _refinement(event: KeyPressEvent) -> None:
        repl.toggle(state.toggle_refinement)

    @keys.add("escape", "left", filter=no_dialog)
    def _previous_tab(event: KeyPressEvent) -> None:
        repl.toggle(lambda: state.select_neighbour(-1))

    @keys.add("escape", "right", filter=no_dialog)
    def _next_tab(event: KeyPressEvent) -> None:
        repl.toggle(lambda: state.select_neighbour(1))

    for digit in "123456789":

        @keys.add("escape", digit, filter=no_dialog)
        def _tab(event: KeyPressEvent, index: int = int(digit) - 1) -> None:
            if index >= len(state.agents):
                state.tell(f"there is no agent {index + 1}; {len(state.agents)} are configured")
                return
            repl.toggle(lambda: state.select_agent(state.agents[index]))

    @keys.add("enter", filter=no_dialog & ~has_completions)
    def _enter(event: KeyPressEvent) -> None:
        repl.accept()

    @keys.add("enter", filter=no_dialog & has_completions)
    def _complete(event: KeyPressEvent) -> None:
        """Enter on a highlighted completion takes it (the line is sent by the next Enter);
        with none highlighted, a lone completion is taken and the line sent (``/hel``
        Enter is ``/help``), and otherwise the line is sent as typed."""
        buffer = event.current_buffer
        state = buffer.complete_state
        completion = state.current_completion if state is not None else None
        if completion is not None:
            buffer.apply_completion(completion)
            return
        if state is not None and len(state.completions) == 1:
            buffer.apply_completion(state.completions[0])
        buffer.cancel_completion()
        repl.accept()

    @keys.add("escape", "enter")
    @keys.add("c-j")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @keys.add("c-o", filter=no_dialog)
    def _override(event: KeyPressEvent) -> None:
        repl.open_override()

    @keys.add("c-c", filter=~is_searching)
    def _cancel(event: KeyPressEvent) -> None:
        if state.dialog is Dialog.QUESTION:
            repl.send(Cancel())  # a question card is part of its run: Ctrl+C ends the run
        elif state.dialog is not Dialog.NONE:
            repl.close_dialog()
        elif repl.shell.stop():
            state.tell("stopping the shell command")
        elif event.current_buffer.text and not state.running:
            event.current_buffer.reset()
            state.notice = ""
        else:  # a run, or one just sent that the screen does not show yet
            repl.send(Cancel())
            if not state.running:
                repl.interrupt_idle()

    @keys.add("escape", filter=~has_completions & ~is_searching)
    def _close(event: KeyPressEvent) -> None:
        """Esc closes what is open and never cancels a run: at the vote, a stray Esc must
        not throw away the presentation it waits for."""
        if state.dialog is not Dialog.NONE:
            repl.close_dialog()
        elif event.current_buffer.text and not state.running:
            event.current_buffer.reset()
            state.notice = ""
        elif state.running:
            state.tell("Esc closes dialogs; press Ctrl+C to cancel the run")

    @keys.add("c-d")
    def _quit(event: KeyPressEvent) -> None:
        repl.quit()

    # -- dialogs --------------------------------------------------------------------------

    @keys.add("up", filter=in_dialog)
    def _up(event: KeyPressEvent) -> None:
        repl.move_selection(-1)

    @keys.add("down", filter=in_dialog)
    def _down(event: KeyPressEvent) -> None:
        repl.move_selection(1)

    @keys.add("enter", filter=in_dialog)
    def _choose(event: KeyPressEvent) -> None:
        repl.choose(state.selected)

    @keys.add("pageup", filter=in_dialog)
    def _page_up(event: KeyPressEvent) -> None:
        repl.move_selection(-DIALOG_ROWS, wrap=False)

    @keys.add("pagedown", filter=in_dialog)
    def _page_down(event: KeyPressEvent) -> None:
        repl.move_selection(DIALOG_ROWS, wrap=False)

    for digit in "0123456789":

        @keys.add(digit, filter=in_dialog)
        def _row_number(event: KeyPressEvent, digit: str = digit) -> None:
            repl.type_row_digit(digit)

    @keys.add("<any>", filter=in_dialog)
    def _swallow(event: KeyPressEvent) -> None:
        """Other keys do nothing while a dialog is open (they would edit the hidden line)."""

    return keys
