"""The REPL's and the headless live status's agent lines show a PAOR agent's phase and
iteration, from ``paor_state_changed`` events applied to the run's view, and how many of its
sub-agents run, from ``sub_agent_started``/``sub_agent_finished``."""

from __future__ import annotations

from conclave.actors.agent.events import AgentStatusChanged
from conclave.actors.agent.status import AgentStatus
from conclave.actors.coordination.events import RunStarted
from conclave.actors.events.view import RunView
from conclave.actors.paor.events import PaorStateChanged
from conclave.actors.paor.plan import SubAgentKind
from conclave.actors.paor.report import PaorEnd
from conclave.actors.paor.state import PaorPhase
from conclave.actors.paor.subagent_events import SubAgentFinished, SubAgentStarted
from conclave.config.schema import AgentConfig, ConclaveConfig, FinalAnswerStrategy, LoopKind
from conclave.ui.headless.live_status import agent_state
from conclave.ui.repl.live import LiveRun
from conclave.ui.repl.render import agent_line, fragments_text, progress_block

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


def _subagent(
    kind: type[SubAgentStarted] | type[SubAgentFinished], path: str
) -> SubAgentStarted | SubAgentFinished:
    if kind is SubAgentStarted:
        return SubAgentStarted(
            at=1.1,
            agent="a1",
            subagent=path,
            agent_kind=SubAgentKind.WORKER,
            step=path.rsplit(".", 1)[1],
            task="edit",
            tokens=None,
            seconds=None,
        )
    return SubAgentFinished(
        at=1.2,
        agent="a1",
        subagent=path,
        agent_kind=SubAgentKind.WORKER,
        step=path.rsplit(".", 1)[1],
        end=PaorEnd.GOAL_ACHIEVED,
        summary="done",
        tokens=10,
        seconds=0.1,
        crashes=0,
    )


ACTING = _moved(P.PLANNING, P.ACTING, 2)
TWO_RUNNING = (_subagent(SubAgentStarted, "a1/2.s1"), _subagent(SubAgentStarted, "a1/2.s2"))


def test_the_status_counts_the_sub_agents_running() -> None:
    agent = RunView.from_events([STARTED, WORKING, ACTING, *TWO_RUNNING]).agents["a1"]
    assert agent_line(agent) == "acting, iteration 2 · 2 sub-agents running"
    assert agent_state(agent) == "acting, iteration 2 · 2 sub-agents running"


def test_a_finished_sub_agent_is_no_longer_counted() -> None:
    events = [STARTED, WORKING, ACTING, *TWO_RUNNING, _subagent(SubAgentFinished, "a1/2.s1")]
    agent = RunView.from_events(events).agents["a1"]
    assert agent_line(agent) == "acting, iteration 2 · 1 sub-agent running"
    assert agent.subagents == ("a1/2.s2",)


def test_none_is_counted_once_the_agent_moves_on_from_acting() -> None:
    observing = _moved(P.ACTING, P.OBSERVING, 2)
    agent = RunView.from_events([STARTED, WORKING, ACTING, *TWO_RUNNING, observing]).agents["a1"]
    assert agent_line(agent) == "observing, iteration 2"


def test_the_repl_live_snapshot_shows_the_sub_agents_in_the_agents_line() -> None:
    live = LiveRun(ConclaveConfig(agents=(AgentConfig(id="a1", loop=LoopKind.PAOR),)))
    for event in (STARTED, WORKING, ACTING, *TWO_RUNNING):
        live.apply(event)
    block = fragments_text(
        progress_block(live.snapshot().progress, status="Running", elapsed=1.0, width=100)
    )
    assert "  a1  acting, iteration 2 · 2 sub-agents running\n" in block
