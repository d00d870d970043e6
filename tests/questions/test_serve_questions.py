"""Questions of a served run: with ``questions`` on, a question is a ``question_asked`` line
to the run's watchers, any client may answer it by its id (a ``verdict`` says whether it was
taken), and nobody answering within ``decision_timeout`` takes its default. A real server on
loopback, real websocket clients, scripted agents."""

from __future__ import annotations

from pathlib import Path

from conclave.config.schema import AgentConfig, ConclaveConfig, OrchestratorConfig
from conclave.config.schema.backends import ScriptedBackendConfig
from tests.questions.helpers import CRITICAL, asks
from tests.serve.helpers import connect, serving

CONFIG = ConclaveConfig(
    agents=(AgentConfig(id="solo", backend=ScriptedBackendConfig(tool_steps=asks(CRITICAL))),),
    orchestrator=OrchestratorConfig(quiet_period=None),
)


async def test_any_client_answers_the_question_its_watchers_were_sent(tmp_path: Path) -> None:
    async with (
        serving(tmp_path, config=CONFIG) as server,
        connect(server) as starter,
        connect(server) as other,
    ):
        run_id = await starter.start_run(questions=True)
        asked = (await starter.until("question_asked"))[-1]
        assert asked["severity"] == "critical" and asked["default"] == "keep"
        await other.send(
            type="answer", run_id=run_id, question_id=asked["question_id"], value="delete"
        )
        verdict = (await other.until("verdict"))[-1]
        lines = await starter.until("result")

    assert verdict["accepted"] is True
    assert (verdict["agent"], verdict["question_id"]) == ("solo", asked["question_id"])
    answered = next(line for line in lines if line["type"] == "question_answered")
    assert (answered["answer"], answered["source"]) == ("delete", "user")
    assert lines[-1]["termination"] == "completed"


async def test_an_answer_to_a_question_not_open_is_refused_saying_why(tmp_path: Path) -> None:
    async with serving(tmp_path, config=CONFIG) as server, connect(server) as client:
        run_id = await client.start_run(questions=True)
        asked = (await client.until("question_asked"))[-1]
        await client.send(type="answer", run_id=run_id, question_id="q9", value="x")
        refused = (await client.until("verdict"))[-1]
        await client.send(
            type="answer", run_id=run_id, question_id=asked["question_id"], value="keep"
        )
        await client.until("result")

    assert refused["accepted"] is False
    assert "'q9' is not the open one" in refused["error"]


async def test_a_question_nobody_answers_takes_its_default_after_the_decision_timeout(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path, config=CONFIG) as server, connect(server) as client:
        await client.start_run(questions=True, decision_timeout=0.2)
        lines = await client.until("result")

    answered = next(line for line in lines if line["type"] == "question_answered")
    assert (answered["answer"], answered["source"]) == ("keep", "default")
    assert lines[-1]["assumptions"] == [
        {"agent": "solo", "question": CRITICAL["question"], "assumption": "keep"}
    ]


async def test_without_questions_a_served_run_asks_nothing(tmp_path: Path) -> None:
    async with serving(tmp_path, config=CONFIG) as server, connect(server) as client:
        await client.start_run()
        lines = await client.until("result")

    assert "question_asked" not in [line["type"] for line in lines]


async def test_a_late_joiner_sees_the_open_question_in_its_snapshot(tmp_path: Path) -> None:
    async with serving(tmp_path, config=CONFIG) as server, connect(server) as client:
        run_id = await client.start_run(questions=True)
        asked = (await client.until("question_asked"))[-1]
        async with connect(server) as late:
            await late.send(type="subscribe", run_id=run_id)
            snapshot = await late.next()
            await late.send(
                type="answer", run_id=run_id, question_id=asked["question_id"], value="keep"
            )
            lines = await late.until("result")

    common = {"type", "run_id", "seq", "t", "time"}
    assert snapshot["question"] == {k: v for k, v in asked.items() if k not in common | {"call_id"}}
    assert lines[-1]["termination"] == "completed"
