"""The status line under the input: the model, the context in use, and what the session has
cost so far."""

from __future__ import annotations

from pathlib import Path

from conclave.actors.events.view import RunView
from conclave.config.modes import AgentMode, ModeState
from conclave.ui.repl.layout import status_line
from conclave.ui.repl.live import RunSnapshot
from conclave.ui.repl.render import fragments_text, summarise
from conclave.ui.repl.state import ReplState, UsageTotals
from tests.repl.harness import Session, play


def _state(**changes: object) -> ReplState:
    state = ReplState(
        agents=("a", "b", "c"), models={"a": "gpt-4o", "b": "claude-sonnet", "c": "gpt-4o"}
    )
    for name, value in changes.items():
        setattr(state, name, value)
    return state


def _line(state: ReplState) -> str:
    return fragments_text(status_line(state))


def test_multi_agent_mode_names_each_configured_model_once() -> None:
    assert _line(_state()).startswith("model gpt-4o, claude-sonnet · ")


def test_single_agent_mode_names_the_active_agents_model() -> None:
    modes = ModeState(agent_mode=AgentMode.SINGLE, active_agent="b")
    assert _line(_state(modes=modes)).startswith("model claude-sonnet · ")


def test_the_cost_is_the_sessions_plus_the_running_turns() -> None:
    live = RunSnapshot(
        view=RunView(), progress=summarise(RunView()), context_tokens=12_345, cost_usd=0.25
    )
    state = _state(usage=UsageTotals(runs=1, cost_usd=1.5), live=live)
    assert _line(state) == "model gpt-4o, claude-sonnet · context 12,345 tokens · cost $1.7500"


def test_an_ended_runs_cost_is_counted_once() -> None:
    live = RunSnapshot(
        view=RunView(), progress=summarise(RunView()), context_tokens=10, cost_usd=0.25, ended=True
    )
    state = _state(usage=UsageTotals(runs=1, cost_usd=0.25), live=live)
    assert _line(state).endswith("cost $0.2500")


def test_unpriced_calls_make_the_cost_unknown_not_zero() -> None:
    live = RunSnapshot(view=RunView(), progress=summarise(RunView()), cost_usd=None)
    assert _line(_state(live=live)).endswith("cost unknown (unpriced models)")


def test_with_no_priced_backend_the_cost_is_a_dash_not_zero() -> None:
    assert _line(_state(priced=False)).endswith(" · cost -")


def test_with_a_priced_backend_the_cost_before_any_run_is_zero() -> None:
    assert _line(_state()).endswith(" · cost $0.0000")


def test_after_a_run_the_status_line_shows_the_model_and_the_context_used(
    tmp_path: Path,
) -> None:
    shown: list[str] = []

    async def scenario(session: Session) -> None:
        assert session.render(lambda repl: status_line(repl.state))  # before any run
        shown.append(fragments_text(session.render(lambda repl: status_line(repl.state))))
        await session.result_of("Name three uses of a paperclip")
        shown.append(fragments_text(session.render(lambda repl: status_line(repl.state))))

    play(scenario, tmp_path)
    assert shown[0] == "model scripted · cost -"  # scripted backends have no price
    assert shown[1].startswith("model scripted · context ")
    tokens = int(shown[1].split("context ")[1].split(" tokens")[0].replace(",", ""))
    assert tokens > 0
    assert shown[1].endswith("cost -")
