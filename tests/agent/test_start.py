"""A bug in an agent's start-up excludes that agent (it reports ``AgentFailed`` and stops),
instead of failing its start, which would escalate and fail the whole run."""

from __future__ import annotations

from conclave.actors.agent.actor import AgentActor
from conclave.actors.agent.events import AgentStatusChanged
from conclave.runtime import ChildExited
from tests.agent.harness import AGENT, FakeBackend, open_agent


class _BuggyStart(AgentActor):
    def _rearm(self) -> None:
        raise RuntimeError("a bug while re-arming")


async def test_an_agent_whose_start_up_raises_is_excluded_and_stops(autojump_clock: object) -> None:
    async with open_agent(FakeBackend([]), actor=_BuggyStart) as run:
        excluded = await run.tap.wait_for(AgentStatusChanged, lambda e: e.status == "excluded")
        exited = await run.tap.wait_for(ChildExited, lambda e: e.child == f"agent:{AGENT}")

    reason = "the agent could not start: RuntimeError: a bug while re-arming"
    assert excluded.detail == reason
    assert [f.reason for f in run.desk.failed] == [reason]
    assert exited.error is None
