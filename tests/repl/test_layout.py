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
from conclave.ui.repl.layout import mode_bar, tab_bar
from conclave.ui.repl.render import fragments_text
from conclave.ui.repl.state import ReplState


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
