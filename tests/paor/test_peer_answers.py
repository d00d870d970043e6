"""A PAOR round takes the peers' answers that arrive while it works at its step boundaries,
as a free round with tools does (the ``inject`` in-flight policy), even when the agent has no
tools of its own: the answers enter its transcript, and the round is neither restarted nor
made to redo its iterations."""

from __future__ import annotations

from trio.testing import MockClock

from conclave.actors.agent.events import AnswersInjected, RoundRestarted
from conclave.actors.coordination.events import AnswerAdded
from conclave.actors.paor.events import PaorFinished
from conclave.actors.run.driver import RunSpec, open_run
from conclave.config.schema import (
    AgentConfig,
    ConclaveConfig,
    LoopKind,
    OrchestratorConfig,
    ScriptedBackendConfig,
)
from tests.coordination.helpers import Recorder, WaitingTap

TASK = "rename old_total to compute_total"


def _config() -> ConclaveConfig:
    """Without voting, an agent that answered works again on each new answer, in PAOR for
    ``p`` (no tools: three calls of a second each). ``q`` answers at once; ``p`` answers at
    3 s and starts its second round on ``q``'s second answer; ``s`` answers at 4 s, while
    that round works; ``r`` answers last and ends the run."""
    paor = AgentConfig(id="p", loop=LoopKind.PAOR, backend=ScriptedBackendConfig(latency=1.0))
    quick = AgentConfig(id="q", backend=ScriptedBackendConfig(latency=0.5, seed=1))
    mid = AgentConfig(id="s", backend=ScriptedBackendConfig(latency=4.0, seed=3))
    slow = AgentConfig(id="r", backend=ScriptedBackendConfig(latency=10.0, seed=2))
    orchestrator = OrchestratorConfig(
        quiet_period=None, skip_voting=True, max_new_answers_per_agent=2
    )
    return ConclaveConfig(agents=(paor, quick, mid, slow), orchestrator=orchestrator)


async def test_a_peer_answer_enters_the_paor_round_at_its_next_step_boundary(
    autojump_clock: MockClock,
) -> None:
    tap, recorder = WaitingTap(), Recorder()
    spec = RunSpec(task=TASK, config=_config(), backend_factory=recorder)
    async with open_run(spec, taps=[tap]) as handle:
        await handle.result()
    [added] = [e for e in tap.of_type(AnswerAdded) if e.agent == "s"]
    [injected] = [e for e in tap.of_type(AnswersInjected) if e.agent == "p"]
    assert (injected.round, injected.labels) == (2, (added.label,))
    reflections = [
        r for r in recorder.backends["p"].requests if [t.name for t in r.tools] == ["reflect"]
    ]
    assert added.label not in str(reflections[0].messages)  # the first round's
    assert added.label in str(reflections[1].messages)


async def test_a_peer_answer_does_not_restart_a_paor_round(autojump_clock: MockClock) -> None:
    tap = WaitingTap()
    async with open_run(RunSpec(task=TASK, config=_config()), taps=[tap]) as handle:
        await handle.result()
    assert [e for e in tap.of_type(RoundRestarted) if e.agent == "p"] == []
    answers = [e.label for e in tap.of_type(AnswerAdded) if e.agent == "p"]
    assert answers == ["agent1.1", "agent1.2"]
    finished = [e.iterations for e in tap.of_type(PaorFinished) if e.agent == "p"]
    assert finished == [1, 1]
