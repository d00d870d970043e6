"""In a run (the scripted backend, no key), the run's fault plan reaches an agent's
sub-agents: an Explore sub-agent crashed on purpose is restarted, or reported, and the
agent goes on to answer."""

from __future__ import annotations

from pathlib import Path

import trio

from conclave.actors.paor.subagent_events import SubAgentFinished
from conclave.actors.run.driver import RunSpec, run
from conclave.actors.run.result import Termination
from conclave.config.loader import parse_config, parse_yaml
from conclave.config.schema import ConclaveConfig
from conclave.runtime import ChildExited, MemoryTap, SupervisorAction
from tests.paor.test_subagents import CrashExplorers

_CONFIG = """
orchestrator: {quiet_period: null, tools: true, max_new_answers_per_agent: 1, skip_voting: true}
agents:
  - id: lead
    loop: paor
    backend:
      type: scripted
      subtasks:
        - id: look
          delegate: explore
          task: understand this codebase
          tool_steps: [{tool: search, arguments: {pattern: nothing-here, path: "."}}]
"""


def _config() -> ConclaveConfig:
    return parse_config(parse_yaml(_CONFIG))


async def _run(tmp_path: Path, times: int) -> tuple[MemoryTap, str]:
    tap = MemoryTap()
    spec = RunSpec(
        task="rename", config=_config(), workdir=tmp_path, faults=CrashExplorers(times=times)
    )
    with trio.fail_after(30):
        result = await run(spec, taps=[tap])
    assert result.termination is Termination.COMPLETED
    return tap, result.final_answer or ""


async def test_an_explore_sub_agent_crashed_once_is_restarted_and_its_summary_used(
    tmp_path: Path,
) -> None:
    tap, answer = await _run(tmp_path, times=1)

    restarts = [e for e in tap.of_type(ChildExited) if e.child == "subagent:lead/1.look"]
    assert [e.action for e in restarts] == [SupervisorAction.RESTART]
    [finished] = tap.of_type(SubAgentFinished)
    assert finished.crashes == 1 and finished.summary.startswith("Done: Explored with 1 calls")
    assert "sub-agents: explore step look: Done: Explored with 1 calls" in answer


async def test_an_explore_sub_agent_crashed_twice_is_reported_and_the_agent_answers(
    tmp_path: Path,
) -> None:
    tap, answer = await _run(tmp_path, times=2)

    [finished] = tap.of_type(SubAgentFinished)
    assert finished.end is None and finished.crashes == 2
    assert "explore step look: ERROR: The explore sub-agent for step look crashed 2" in answer
