"""The override window (the REPL enables it): after ``VotingComplete`` the run waits for a
human; ``OverrideDecision(presenter)`` picks another presenter, ``Continue`` keeps the
winner. Headless runs have no window."""

from __future__ import annotations

import trio

from conclave.actors.agent.events import LlmRequestStarted
from conclave.actors.coordination.events import FinalAnswerProduced, VotingComplete
from conclave.actors.human.manual import ManualGate
from conclave.actors.run.driver import RunSpec, open_run
from conclave.actors.run.result import RunResult
from conclave.config.schema import FinalAnswerStrategy
from tests.coordination.helpers import TASK, WaitingTap, agent, config

# Everyone votes for b (agent2).
CONFIG = config(
    agent("a", seed=1, latency=0.2, vote="agent2"),
    agent("b", seed=2, latency=0.2, vote="agent2"),
    agent("c", seed=3, latency=0.2, vote="agent2"),
)


async def _at_the_window(tap: WaitingTap) -> None:
    """Wait for the vote's result; nothing has been presented yet."""
    complete: VotingComplete = await tap.wait_for(VotingComplete)
    assert complete.winner == "b"
    assert tap.of_type(FinalAnswerProduced) == []


async def test_override_picks_a_different_presenter(autojump_clock: object) -> None:
    tap = WaitingTap()
    async with open_run(RunSpec(task=TASK, config=CONFIG, human=ManualGate()), taps=[tap]) as h:
        await _at_the_window(tap)
        verdict = await h.override("c")
        result: RunResult = await h.result()

    assert verdict.accepted
    assert verdict.label == "agent3.1"
    assert result.winner == "b"
    assert result.presenter == "c"
    [final] = tap.of_type(FinalAnswerProduced)
    assert final.presenter == "c"
    [presentation] = [e for e in tap.of_type(LlmRequestStarted) if e.purpose == "present"]
    assert presentation.agent == "c"
    assert result.final_answer == next(a.content for a in result.answers if a.agent == "c")


async def test_continue_keeps_the_winner_as_presenter(autojump_clock: object) -> None:
    tap = WaitingTap()
    async with open_run(RunSpec(task=TASK, config=CONFIG, human=ManualGate()), taps=[tap]) as h:
        await _at_the_window(tap)
        verdict = await h.continue_()
        result = await h.result()

    assert verdict.accepted
    assert result.winner == result.presenter == "b"
    assert result.termination == "completed"


async def test_the_run_waits_in_the_window_until_someone_decides(autojump_clock: object) -> None:
    tap = WaitingTap()
    async with open_run(RunSpec(task=TASK, config=CONFIG, human=ManualGate()), taps=[tap]) as h:
        await _at_the_window(tap)
        await trio.sleep(1000.0)
        assert tap.of_type(FinalAnswerProduced) == []
        await h.continue_()
        await h.result()

    [final] = tap.of_type(FinalAnswerProduced)
    assert final.at >= 1000.0


async def test_override_to_an_agent_without_an_answer_is_refused_with_the_choices(
    autojump_clock: object,
) -> None:
    tap = WaitingTap()
    async with open_run(RunSpec(task=TASK, config=CONFIG, human=ManualGate()), taps=[tap]) as h:
        await _at_the_window(tap)
        refused = await h.override("nobody")
        accepted = await h.override("a")
        result = await h.result()

    assert not refused.accepted
    assert refused.error == "'nobody' has no answer; choose one of: a, b, c"
    assert accepted.accepted
    assert result.presenter == "a"


async def test_override_with_winner_reuse_returns_the_chosen_answer_verbatim(
    autojump_clock: object,
) -> None:
    cfg = config(*CONFIG.agents, final_answer_strategy=FinalAnswerStrategy.WINNER_REUSE)
    tap = WaitingTap()
    async with open_run(RunSpec(task=TASK, config=cfg, human=ManualGate()), taps=[tap]) as h:
        await _at_the_window(tap)
        await h.override("a")
        result = await h.result()

    assert result.final_answer == next(a.content for a in result.answers if a.agent == "a")
    assert [e for e in tap.of_type(LlmRequestStarted) if e.purpose == "present"] == []


async def test_headless_runs_have_no_window(autojump_clock: object) -> None:
    tap = WaitingTap()
    async with open_run(RunSpec(task=TASK, config=CONFIG), taps=[tap]) as h:
        result = await h.result()
        refused = await h.continue_()

    assert result.presenter == "b"
    assert not refused.accepted
    assert refused.error == "no override window is open"
