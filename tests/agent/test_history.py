"""A later turn's agents are shown the earlier turns as real user/assistant messages before
the task, and answer the current task (the scripted backend reads it, not a history task)."""

from __future__ import annotations

from conclave.actors.agent.events import AgentStatusChanged
from conclave.actors.coordination.protocol import SubmitAnswer
from conclave.actors.llm.protocol import ChatMessage
from conclave.actors.run.spec import build_backend
from conclave.actors.run.turn import Turn
from tests.agent.harness import open_agent
from tests.coordination.helpers import RecordingBackend, agent

EARLIER = Turn(task="Name three uses of a paperclip", final_answer="Hold, pick, reset.")
TASK = "Now name three uses of a rubber band"


async def test_the_agent_is_shown_the_earlier_turn_and_answers_the_current_task(
    autojump_clock: object,
) -> None:
    backend = RecordingBackend(build_backend(agent("a", seed=1)))
    async with open_agent(backend, history=(EARLIER,)) as run:
        run.start(TASK)
        await run.tap.wait_for(AgentStatusChanged, lambda e: e.status == "answered")

    [request] = backend.requests
    assert request.messages[1:3] == (
        ChatMessage(role="user", content=EARLIER.task),
        ChatMessage(role="assistant", content=EARLIER.final_answer),
    )
    assert TASK in request.messages[3].content
    [submitted] = run.desk.submissions
    assert isinstance(submitted, SubmitAnswer)
    assert submitted.content.startswith(f"On “{TASK}”")
