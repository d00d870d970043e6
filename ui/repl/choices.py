"""What the REPL's choice cards share: a numbered list of choices and a free-text field.

The tool approval card, the question card, the run approval dialog and the plan dialog are
each a :class:`ChoiceCard`: a frame holding the card's details, a rule, the choices, the
text field while it is open, and a hint line. Keys while choosing: Up/Down (or k/j, Tab)
move, Enter takes the highlighted choice, 1-9 take one directly, Esc does what the card
says; in the field, Enter submits it and Esc goes back to the choices. A click on a choice
takes it. :func:`choice_fragments` draws the list (the mode switch uses it alone), and
:func:`run_alone` runs a card as an application of its own (tests).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from prompt_toolkit.application import Application
from prompt_toolkit.application.current import get_app
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import AnyFormattedText, StyleAndTextTuples
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import AnyContainer, ConditionalContainer, HSplit, Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.mouse_events import MouseEvent, MouseEventType
from prompt_toolkit.output import Output
from prompt_toolkit.widgets import Frame, TextArea

__all__ = ["ChoiceCard", "choice_fragments", "focus", "run_alone"]

Result = TypeVar("Result")


def choice_fragments(
    labels: Sequence[str], selected: int, take: Callable[[int], None]
) -> StyleAndTextTuples:
    """The numbered rows, the selected one marked and reversed; a click on a row takes it."""
    fragments: StyleAndTextTuples = []
    for index, label in enumerate(labels):
        marker = ">" if index == selected else " "
        style = "class:selected reverse" if index == selected else ""
        fragments.append((style, f"{marker} {index + 1}. {label}\n", _clicker(take, index)))
    return fragments


def _clicker(take: Callable[[int], None], index: int) -> Callable[[MouseEvent], None]:
    def handler(event: MouseEvent) -> None:
        if event.event_type is MouseEventType.MOUSE_UP:
            take(index)

    return handler


def focus(target: Window | TextArea) -> None:
    """Focus ``target`` in the running application's layout (a no-op when it is not there,
    e.g. a card driven without an application)."""
    try:
        get_app().layout.focus(target)
    except ValueError:
        return


class ChoiceCard:
    """A card's choices, text field and frame. A subclass says what its rows read
    (:meth:`_labels`), what taking one does (:meth:`_take`), what Esc does while choosing
    (:meth:`_escape`) and what the field's Enter does (:meth:`_accept_field`)."""

    def __init__(
        self,
        *,
        details: AnyContainer,
        title: str,
        hint: str,
        field_prompt: AnyFormattedText,
        style: str = "",
        selected: int = 0,
    ) -> None:
        self.selected = selected
        self.field_open = False
        self.notice = ""
        """Shown in the hint's place until the next choice (an empty field, an edit kept)."""
        self._hint = hint
        self.focus = Window(
            FormattedTextControl(self._choice_fragments, focusable=True, show_cursor=False),
            height=len(self._labels()),
        )
        """What the host focuses when it shows the card."""
        self.field = TextArea(multiline=False, accept_handler=self._accept_field)
        editing = Condition(lambda: self.field_open)
        field_row = HSplit([Window(FormattedTextControl(field_prompt), height=1), self.field])
        self.bindings = self._key_bindings(editing)
        """The card's keys (a subclass may add its own, e.g. the plan's PgUp/PgDn)."""
        self.container = Frame(
            HSplit(
                [
                    details,
                    Window(height=1, char="─"),
                    self.focus,
                    ConditionalContainer(field_row, filter=editing),
                    Window(FormattedTextControl(self._notice), height=1, style="class:hint"),
                ],
                key_bindings=self.bindings,
            ),
            title=title,
            style=style,
        )
        """The card: its details, the choices, the text field while it is open, a hint."""

    def _labels(self) -> Sequence[str]:
        raise NotImplementedError

    def _take(self, index: int) -> None:
        raise NotImplementedError

    def _escape(self) -> None:
        raise NotImplementedError

    def _accept_field(self, buffer: object) -> bool:
        raise NotImplementedError

    def open_field(self, text: str | None = None) -> None:
        """Open the text field and focus it, holding ``text`` when given (else what it held)."""
        self.field_open = True
        if text is not None:
            self.field.text = text
            self.field.buffer.cursor_position = len(text)
        focus(self.field)

    def back(self) -> None:
        """Close the field and return to the choices (the field's Esc)."""
        self.field_open = False
        self.notice = ""
        focus(self.focus)

    def _choice_fragments(self) -> StyleAndTextTuples:
        return choice_fragments(self._labels(), self.selected, self._take)

    def _notice(self) -> str:
        # The open field's prompt says what Enter and Esc do there; the hint is for choosing.
        return self.notice or ("" if self.field_open else self._hint)

    def _key_bindings(self, editing: Condition) -> KeyBindings:
        bindings = KeyBindings()
        choosing = ~editing
        count = len(self._labels())

        @bindings.add("up", filter=choosing)
        @bindings.add("k", filter=choosing)
        def _up(event: KeyPressEvent) -> None:
            self.selected = (self.selected - 1) % count

        @bindings.add("down", filter=choosing)
        @bindings.add("j", filter=choosing)
        @bindings.add("tab", filter=choosing)
        def _down(event: KeyPressEvent) -> None:
            self.selected = (self.selected + 1) % count

        @bindings.add("enter", filter=choosing)
        def _enter(event: KeyPressEvent) -> None:
            self._take(self.selected)

        for index in range(min(count, 9)):
            bindings.add(str(index + 1), filter=choosing)(_taker(self, index))

        @bindings.add("escape", filter=choosing)
        def _escape(event: KeyPressEvent) -> None:
            self._escape()

        @bindings.add("escape", filter=editing)
        def _escape_field(event: KeyPressEvent) -> None:
            self.back()

        return bindings


def _taker(card: ChoiceCard, index: int) -> Callable[[KeyPressEvent], None]:
    def take(event: KeyPressEvent) -> None:
        card._take(index)

    return take


async def run_alone(
    card: ChoiceCard,
    on_result: list[Callable[[Result], None]],
    *,
    interrupt: Callable[[], None] | None = None,
    input: Input | None = None,
    output: Output | None = None,
) -> Result:
    """Run ``card`` as an application of its own until a callback in ``on_result`` fires,
    and return what it received; Ctrl+C calls ``interrupt`` when given."""
    bindings = KeyBindings()
    if interrupt is not None:
        stop = interrupt
        bindings.add("c-c")(lambda event: stop())
    app: Application[Result] = Application(
        layout=Layout(card.container, focused_element=card.focus),
        key_bindings=bindings,
        mouse_support=True,
        full_screen=False,
        input=input,
        output=output,
    )
    on_result.append(lambda result: app.exit(result=result))
    return await app.run_async()
