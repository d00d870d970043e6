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
from tests.coordination.helpers import Recorder, WaitingTap
from tests.paor.helpers import panel_without_voting

TASK = "rename old_total to compute_total"


async def test_a_peer_answer_enters_the_paor_round_at_its_next_step_boundary(
    autojump_clock: MockClock,
) -> None:
    tap, recorder = WaitingTap(), Recorder()
    spec = RunSpec(task=TASK, config=panel_without_voting(), backend_factory=recorder)
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
    async with open_run(RunSpec(task=TASK, config=panel_without_voting()), taps=[tap]) as handle:
        await handle.result()
    assert [e for e in tap.of_type(RoundRestarted) if e.agent == "p"] == []
    answers = [e.label for e in tap.of_type(AnswerAdded) if e.agent == "p"]
    assert answers == ["agent1.1", "agent1.2"]
    finished = [e.iterations for e in tap.of_type(PaorFinished) if e.agent == "p"]
    assert finished == [1, 1]
