"""The REPL's and the headless live status's agent lines show a PAOR agent's phase and
iteration, from ``paor_state_changed`` events applied to the run's view."""

from __future__ import annotations

from conclave.actors.agent.events import AgentStatusChanged
from conclave.actors.agent.status import AgentStatus
from conclave.actors.coordination.events import RunStarted
from conclave.actors.events.view import RunView
from conclave.actors.paor.events import PaorStateChanged
from conclave.actors.paor.state import PaorPhase
from conclave.config.schema import FinalAnswerStrategy
from conclave.ui.headless.live_status import agent_state
from conclave.ui.repl.render import agent_line

P = PaorPhase
STARTED = RunStarted(
    at=0.0,
    task="rename",
    agents=("a1",),
    anonymous_ids=("agent1",),
    strategy=FinalAnswerStrategy.WINNER_PRESENT,
)
WORKING = AgentStatusChanged(at=0.1, agent="a1", status=AgentStatus.WORKING)


def _moved(source: PaorPhase, target: PaorPhase, iteration: int) -> PaorStateChanged:
    return PaorStateChanged(at=1.0, agent="a1", source=source, target=target, iteration=iteration)


def test_the_view_keeps_each_agents_latest_phase_and_iteration() -> None:
    view = RunView.from_events([STARTED, WORKING, _moved(P.REFLECTING, P.PLANNING, 2)])
    agent = view.agents["a1"]
    assert (agent.paor_phase, agent.paor_iteration) == (P.PLANNING, 2)


def test_the_repl_and_the_live_status_show_the_phase_while_it_works() -> None:
    agent = RunView.from_events([STARTED, WORKING, _moved(P.PLANNING, P.ACTING, 2)]).agents["a1"]
    assert agent_line(agent) == "acting, iteration 2"
    assert agent_state(agent) == "acting, iteration 2"


def test_an_ended_round_shows_what_a_free_agent_shows() -> None:
    done = _moved(P.REFLECTING, P.COMPLETE, 1)
    agent = RunView.from_events([STARTED, WORKING, done]).agents["a1"]
    assert agent_line(agent) == "thinking"
    assert agent_state(agent) == "thinking"
