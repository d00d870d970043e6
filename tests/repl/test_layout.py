"""The mode bar and the tab bar fit the terminal's width."""

from __future__ import annotations

from collections.abc import Callable

from prompt_toolkit.application.current import set_app
from prompt_toolkit.data_structures import Size
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from conclave.config.modes import CollaborationMode
from conclave.ui.repl.app import Repl
from conclave.ui.repl.layout import dialog_text, mode_bar, override_hint, tab_bar
from conclave.ui.repl.render import fragments_text
from conclave.ui.repl.state import DIALOG_ROWS, Dialog, OverrideRow, OverrideWindow, ReplState


class _Narrow(DummyOutput):
    def __init__(self, columns: int) -> None:
        self.columns = columns

    def get_size(self) -> Size:
        return Size(rows=24, columns=self.columns)


def _bar(
    columns: int,
    state: ReplState,
    part: Callable[[Repl], StyleAndTextTuples] = mode_bar,
) -> str:
    with create_pipe_input() as keys:
        repl = Repl(state, input=keys, output=_Narrow(columns))
        with set_app(repl.app):
            return fragments_text(part(repl))


def test_a_wide_bar_shows_each_toggles_key() -> None:
    bar = _bar(120, ReplState(agents=("a",)))
    assert "plan mode: off (shift+tab)" in bar
    assert "agents: multi (alt+a)" in bar
    assert len(bar) == 120


def test_a_narrow_bar_drops_the_keys_but_keeps_every_mode_and_the_chip() -> None:
    state = ReplState(agents=("a",))
    state.set_collaboration(CollaborationMode.EXECUTE)
    bar = _bar(60, state)
    assert bar.startswith("[execute]")
    assert "(shift+tab)" not in bar
    for shown in ("plan mode: off", "agents: multi", "refinement: on"):
        assert shown in bar
    assert len(bar) <= 60


def test_the_tab_bar_shows_as_many_agents_as_fit_then_how_many_more() -> None:
    state = ReplState(agents=tuple(f"agent{i:04d}" for i in range(1000)))
    bar = _bar(80, state, tab_bar)
    assert "agent0000" in bar
    assert "more" in bar
    assert len(bar) <= 80


def _window(agents: int, *, tally: dict[str, int]) -> OverrideWindow:
    rows = tuple(
        OverrideRow(agent=f"agent-{i}", label=f"agent{i}.1", preview="an answer")
        for i in range(1, agents + 1)
    )
    return OverrideWindow(winner="agent-1", label="agent1.1", tally=tally, rows=rows)


def test_the_vote_hint_counts_the_winners_votes_not_every_vote_cast() -> None:
    state = ReplState(agents=("agent-1", "agent-2", "agent-3"))
    state.override = _window(3, tally={"agent1.1": 1, "agent2.1": 1, "agent3.1": 1})

    hint = fragments_text(override_hint(state))

    assert "won with agent1.1 (1 vote)" in hint


def test_a_long_override_dialog_shows_a_page_of_rows_around_the_selection() -> None:
    state = ReplState(agents=tuple(f"agent-{i}" for i in range(1, 41)))
    state.override = _window(40, tally={"agent1.1": 40})
    state.dialog = Dialog.OVERRIDE
    state.selected = 29

    shown = _bar(120, state, dialog_text)

    rows = [line for line in shown.splitlines() if line.startswith(" ") and ". agent-" in line]
    assert len(rows) == DIALOG_ROWS
    assert " 30. agent-30 " in shown
    assert " 1. agent-1 " not in shown
    assert "↑ 25 more" in shown
    assert "↓ 7 more" in shown
