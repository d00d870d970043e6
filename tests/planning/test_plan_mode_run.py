"""A plan-mode run of real agents: they are offered only read-only tools (besides the
workflow tools), and on scripted models the run ends with one plan (merged under
synthesize), which is what the REPL's approval dialog and ``--mode plan`` read."""

from __future__ import annotations

from pathlib import Path

from conclave.actors.llm.protocol import (
    CallPurpose,
)
from conclave.actors.planning.plan import parse_plan
from conclave.config.modes import CollaborationMode
from conclave.config.schema import ConclaveConfig, FinalAnswerStrategy
from conclave.config.schema.context import ContextPath
from tests.coordination.helpers import Recorder, agent, config, run_tapped

WORKFLOW = {"new_answer", "vote"}


def _planner_config(tmp_path: Path) -> ConclaveConfig:
    (tmp_path / "notes.txt").write_text("the docs to tidy\n")
    return config(
        agent("a", seed=1, latency=0),
        agent("b", seed=2, latency=0),
        context_paths=(ContextPath(path=tmp_path),),
    )


def _offered(recorder: Recorder) -> list[tuple[str, bool]]:
    return [
        (tool.name, tool.read_only)
        for backend in recorder.backends.values()
        for request in backend.requests
        if request.purpose is CallPurpose.ROUND
        for tool in request.tools
        if tool.name not in WORKFLOW
    ]


# Runs with tools open sandboxes through worker threads: on a virtual clock, the time a
# thread takes would jump the clock to the run's limit, so these run on the real one.


async def test_a_plan_mode_run_offers_only_read_only_tools(tmp_path: Path) -> None:
    recorder = Recorder()

    run = await run_tapped(
        _planner_config(tmp_path), backend_factory=recorder, mode=CollaborationMode.PLAN
    )

    offered = _offered(recorder)
    assert run.result.termination == "completed"
    assert offered  # they can still investigate
    assert all(read_only for _, read_only in offered)


async def test_the_same_run_outside_plan_mode_offers_tools_that_write(tmp_path: Path) -> None:
    """What makes the read-only check above mean something: these agents have write tools."""
    recorder = Recorder()

    await run_tapped(_planner_config(tmp_path), backend_factory=recorder)

    assert any(not read_only for _, read_only in _offered(recorder))


async def test_a_plan_mode_run_on_scripted_agents_ends_with_a_plan(
    autojump_clock: object,
) -> None:
    run = await run_tapped(
        config(agent("a", seed=1, latency=0.2), agent("b", seed=2, latency=0.3)),
        mode=CollaborationMode.PLAN,
    )

    assert run.result.final_answer is not None
    assert parse_plan(run.result.final_answer) is not None
    assert all(parse_plan(answer.content) is not None for answer in run.result.answers)


async def test_a_synthesized_plan_run_presents_one_plan_with_every_agents_steps(
    autojump_clock: object,
) -> None:
    run = await run_tapped(
        config(
            agent("a", seed=1, latency=0.2),
            agent("b", seed=2, latency=0.3),
            final_answer_strategy=FinalAnswerStrategy.SYNTHESIZE,
        ),
        mode=CollaborationMode.PLAN,
    )

    assert run.result.final_answer is not None
    merged = parse_plan(run.result.final_answer)
    assert merged is not None
    actions = {step.action for step in merged.steps}
    for answer in run.result.answers:
        plan = parse_plan(answer.content)
        assert plan is not None
        assert {step.action for step in plan.steps} <= actions
