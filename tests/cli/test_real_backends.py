"""``conclave run --config`` with real backends, end to end: two ``openai`` agents and one
``anthropic`` agent against a real HTTP server on loopback that speaks both protocols
(tests/llm/loopback.py), run as the installed command. The answer, the usage and the cost
come back in the JSON result; ``--model`` and ``--max-cost`` apply to the run; an agent whose
key is refused is excluded at once with one line naming it, the endpoint and the cause, and
the key it sent is written nowhere.

No ``autojump_clock`` here: these tests use real sockets and real time.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import yaml

from conclave.ui.exit_codes import ExitCode
from tests.cli.helpers import TASK, conclave_process
from tests.llm.loopback import LoopbackServer, Recorded, Reply, SseReply, open_loopback_server
from tests.llm.wire import anthropic_error, anthropic_events, openai_error, openai_reply

# One xdist worker runs this module, so the panel run behind ``panel`` is made once.
pytestmark = pytest.mark.xdist_group("real_backends")

KEY = "sk-test-RECOGNISABLE-0123456789abcdef"
"""Every agent's key: a test can grep for it in everything the command wrote."""
OPENAI_USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
ANTHROPIC_INPUT = 50
ANTHROPIC_OUTPUT = 15
PRICE = {"input_per_mtok": 3.0, "output_per_mtok": 15.0}
RUN_LIMIT = 60.0


@pytest.fixture
async def server() -> AsyncIterator[LoopbackServer]:
    async with open_loopback_server() as running:
        running.handler = _coordinate
        yield running


@attrs.frozen
class PanelRun:
    """One run of the panel as ``--output-format json``, and what the server was asked."""

    result: dict[str, Any]
    requests: list[Recorded]


@pytest.fixture(scope="module")
def panel(tmp_path_factory: pytest.TempPathFactory) -> PanelRun:
    """The plain panel run, made once for the specs that read its result (each run costs
    seconds: the command imports both SDKs)."""

    async def once() -> PanelRun:
        async with open_loopback_server() as running:
            running.handler = _coordinate
            result = await _run_json(running, tmp_path_factory.mktemp("panel"))
            return PanelRun(result=result, requests=list(running.requests))

    return trio.run(once)


def _offered(request: Recorded) -> list[str]:
    tools = request.json.get("tools") or []
    return [t["function"]["name"] if "function" in t else t["name"] for t in tools]


def _coordinate(request: Recorded, *, vote_for: str = "agent1") -> Reply:
    """Plays every agent: answer when only ``new_answer`` is offered, vote for ``vote_for``
    when ``vote`` is, and present when no tool is (the winner's presentation)."""
    model = request.json["model"]
    offered = _offered(request)
    if "vote" in offered:
        call = ("vote", {"agent_id": vote_for, "reason": "the clearest"})
    elif "new_answer" in offered:
        call = ("new_answer", {"content": f"{model}: use it as a bookmark"})
    else:
        call = None
    if request.path.endswith("/chat/completions"):
        calls = () if call is None else ((call[0], "call_1", [json.dumps(call[1])]),)
        text = f"FINAL from {model}" if call is None else ""
        return SseReply(parts=tuple(openai_reply(text, tool_calls=calls, usage=OPENAI_USAGE)))
    if call is None:
        block: dict[str, Any] = {"type": "text", "text": [f"FINAL from {model}"]}
    else:
        arguments = [json.dumps(call[1])]
        block = {"type": "tool_use", "id": "toolu_1", "name": call[0], "json": arguments}
    events = anthropic_events(
        [block],
        stop_reason="end_turn" if call is None else "tool_use",
        usage={"input_tokens": ANTHROPIC_INPUT},
        output_tokens=ANTHROPIC_OUTPUT,
    )
    return SseReply(parts=tuple(events))


def _refuse_the_key(request: Recorded) -> Reply:
    """A 401 whose body echoes the key it was sent, as real providers do."""
    sent = request.headers.get("authorization", "").removeprefix("Bearer ")
    sent = sent or request.headers.get("x-api-key", "")
    message = f"Incorrect API key provided: {sent}. You can find your key at ..."
    if request.path.endswith("/chat/completions"):
        return openai_error(401, message, code="invalid_api_key")
    return anthropic_error(401, "authentication_error", message)


def _config(path: Path, server: LoopbackServer, **orchestrator: Any) -> Path:
    """Two openai agents and one anthropic agent, each answering once, then voting."""
    common = {
        "api_key": KEY,
        "max_retries": 0,
        "timeouts": {"connect": 5, "stall": 10},
        "price": PRICE,
    }
    data = {
        "agents": [
            {
                "id": "alice",
                "backend": {"type": "openai", "model": "gpt-alice", "base_url": f"{server.url}/v1"}
                | common,
            },
            {
                "id": "bob",
                "backend": {"type": "openai", "model": "gpt-bob", "base_url": f"{server.url}/v1"}
                | common,
            },
            {
                "id": "carol",
                "backend": {"type": "anthropic", "model": "claude-carol", "base_url": server.url}
                | common,
            },
        ],
        "orchestrator": {
            "quiet_period": None,
            "max_new_answers_per_agent": 1,
            "defer_voting_until_all_answered": True,
            **orchestrator,
        },
    }
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


async def _run_json(server: LoopbackServer, tmp_path: Path, *flags: str) -> dict[str, Any]:
    config = _config(tmp_path / "panel.yaml", server)
    done = await conclave_process(
        "run",
        "--config",
        str(config),
        "--output-format",
        "json",
        *flags,
        TASK,
        cwd=tmp_path,
        limit=RUN_LIMIT,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    result["exit_code"] = done.returncode
    result["stderr"] = done.stderr.decode()
    return result


def _calls(requests: list[Recorded], model: str) -> int:
    return sum(1 for r in requests if r.json["model"] == model)


def test_a_mixed_panel_of_openai_and_anthropic_agents_answers_votes_and_presents(
    panel: PanelRun,
) -> None:
    result = panel.result

    assert result["exit_code"] == ExitCode.OK, result["stderr"]
    assert result["termination"] == "completed"
    assert result["final_answer"] == "FINAL from gpt-alice"
    assert result["winner"] == "alice"
    assert result["presenter"] == "alice"
    assert result["decided_by"] == "votes"
    assert {a["agent"]: a["content"] for a in result["answers"]} == {
        "alice": "gpt-alice: use it as a bookmark",
        "bob": "gpt-bob: use it as a bookmark",
        "carol": "claude-carol: use it as a bookmark",
    }
    assert result["failed_agents"] == {}


def test_the_json_result_carries_each_agents_usage_and_the_total(panel: PanelRun) -> None:
    result = panel.result

    agents = result["usage"]["agents"]
    for agent, model, inp, out in (
        ("alice", "gpt-alice", OPENAI_USAGE["prompt_tokens"], OPENAI_USAGE["completion_tokens"]),
        ("bob", "gpt-bob", OPENAI_USAGE["prompt_tokens"], OPENAI_USAGE["completion_tokens"]),
        ("carol", "claude-carol", ANTHROPIC_INPUT, ANTHROPIC_OUTPUT),
    ):
        calls = _calls(panel.requests, model)
        assert agents[agent]["calls"] == calls
        assert agents[agent]["input_tokens"] == calls * inp
        assert agents[agent]["output_tokens"] == calls * out
    total = result["usage"]["total"]
    assert total["calls"] == len(panel.requests) == result["llm_completed"]
    assert total["input_tokens"] == sum(a["input_tokens"] for a in agents.values())


def test_the_json_result_carries_the_runs_cost_at_the_configured_prices(panel: PanelRun) -> None:
    result = panel.result

    total = result["usage"]["total"]
    expected = (total["input_tokens"] * 3.0 + total["output_tokens"] * 15.0) / 1_000_000
    assert result["cost_usd"] == pytest.approx(expected)
    assert total["cost_usd"] == result["cost_usd"]
    for usage in result["usage"]["agents"].values():
        dollars = (usage["input_tokens"] * 3.0 + usage["output_tokens"] * 15.0) / 1_000_000
        assert usage["cost_usd"] == pytest.approx(dollars)


async def test_model_overrides_the_model_of_every_agent_for_the_run(
    server: LoopbackServer, tmp_path: Path
) -> None:
    result = await _run_json(server, tmp_path, "--model", "gpt-override")

    assert result["exit_code"] == ExitCode.OK, result["stderr"]
    assert {r.json["model"] for r in server.requests} == {"gpt-override"}


async def test_max_cost_halts_the_run_like_a_timeout_with_the_best_answer_so_far(
    server: LoopbackServer, tmp_path: Path
) -> None:
    # One openai call costs $0.0006 here: the budget is reached by the second call.
    result = await _run_json(server, tmp_path, "--max-cost", "0.001")

    assert result["exit_code"] == ExitCode.TIMEOUT
    assert result["termination"] == "max_cost"
    assert result["cost_usd"] >= 0.001
    assert len(server.requests) < 7  # the complete run makes seven calls


async def test_an_agent_whose_key_is_refused_is_excluded_at_once_with_one_line_that_says_why(
    server: LoopbackServer, tmp_path: Path
) -> None:
    server.handler = _refuse_the_key
    config = _config(tmp_path / "panel.yaml", server)

    done = await conclave_process(
        "run", "--config", str(config), TASK, cwd=tmp_path, limit=RUN_LIMIT
    )

    assert done.returncode == ExitCode.FAILED
    stderr = done.stderr.decode()
    host = f"127.0.0.1:{server.port}"
    for agent in ("alice", "bob", "carol"):
        [line] = [x for x in stderr.splitlines() if f"{agent} excluded:" in x]
        assert host in line
        assert "API key was refused" in line
    assert len(server.requests) == 3  # one call each: a refused key is not tried again


async def test_a_key_echoed_by_the_server_is_written_nowhere(
    server: LoopbackServer, tmp_path: Path
) -> None:
    server.handler = _refuse_the_key
    config = _config(tmp_path / "panel.yaml", server)
    log_dir = tmp_path / "run-log"

    outputs: list[bytes] = []

    async def run_as(output: str) -> None:
        done = await conclave_process(
            "run", "--config", str(config), "--output-format", output, "--verbose",
            "--log-dir", str(log_dir / output), TASK, cwd=tmp_path, limit=RUN_LIMIT)  # fmt: skip
        outputs.extend((done.stdout, done.stderr))

    async with trio.open_nursery() as nursery:
        for output in ("text", "json", "stream-json"):
            nursery.start_soon(run_as, output)

    written = [path.read_bytes() for path in log_dir.rglob("*") if path.is_file()]
    assert len(written) >= 3  # an event log per run, at least
    for data in (*outputs, *written):
        assert KEY.encode() not in data
        assert b"RECOGNISABLE" not in data
    assert any(KEY in r.headers.get("authorization", "") for r in server.requests)


async def test_the_run_goes_on_without_an_agent_whose_key_is_refused(
    server: LoopbackServer, tmp_path: Path
) -> None:
    def refuse_alice(request: Recorded) -> Reply:
        refused = request.json["model"] == "gpt-alice"  # agent1, who will have no answer
        return _refuse_the_key(request) if refused else _coordinate(request, vote_for="agent2")

    server.handler = refuse_alice
    result = await _run_json(server, tmp_path)

    assert result["exit_code"] == ExitCode.OK, result["stderr"]
    assert list(result["failed_agents"]) == ["alice"]
    assert "API key was refused" in result["failed_agents"]["alice"]
    assert result["winner"] == "bob"
    assert result["final_answer"] == "FINAL from gpt-bob"


def _panel_config(path: Path, server: LoopbackServer, **changes: Any) -> Path:
    """The panel's config, with ``changes`` to every backend (``orchestrator`` to it)."""
    _config(path, server)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    orchestrator = changes.pop("orchestrator", {})
    for agent in data["agents"]:
        agent["backend"] |= changes
    data["orchestrator"] |= orchestrator
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


async def test_a_dead_endpoint_is_left_behind_once_the_others_are_done(
    server: LoopbackServer, tmp_path: Path
) -> None:
    async def carol_never_answers(request: Recorded) -> Reply:
        if request.json["model"] == "claude-carol":
            await trio.sleep_forever()
        return _coordinate(request)

    server.handler = carol_never_answers
    config = _panel_config(
        tmp_path / "panel.yaml",
        server,
        timeouts={"connect": 5, "first_byte": 3},
        orchestrator={"failing_agent_grace": 1},
    )

    done = await conclave_process(
        "run", "--config", str(config), "--output-format", "json", "--verbose", TASK,
        cwd=tmp_path, limit=RUN_LIMIT)  # fmt: skip

    result = json.loads(done.stdout)
    assert done.returncode == ExitCode.OK, done.stderr.decode()
    assert list(result["failed_agents"]) == ["carol"]
    reason = result["failed_agents"]["carol"]
    assert "no reply began within 3s (timeouts.first_byte)" in reason
    assert "failing_agent_grace" in reason
    # Its first try failed at 3 s and the grace is 1 s (measured: 5.0 s in all); its
    # three tries alone would take 9 s (before this change the run took 10.5 s).
    assert result["duration_s"] < 8.5, result["duration_s"]
    stderr = done.stderr.decode()
    assert "carol try 1 of 3 failed (next try in" in stderr


async def test_a_server_that_reports_no_usage_makes_tokens_and_cost_unknown_not_zero(
    server: LoopbackServer, tmp_path: Path
) -> None:
    config = _panel_config(tmp_path / "panel.yaml", server)
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["agents"] = [a for a in data["agents"] if a["backend"]["type"] == "openai"]
    for agent in data["agents"]:
        agent["backend"]["stream_usage"] = False
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    server.handler = _without_usage

    done = await conclave_process(
        "run",
        "--config",
        str(config),
        "--output-format",
        "json",
        TASK,
        cwd=tmp_path,
        limit=RUN_LIMIT,
    )

    result = json.loads(done.stdout)
    assert done.returncode == ExitCode.OK, done.stderr.decode()
    assert result["input_tokens"] is None
    assert result["output_tokens"] is None
    assert result["cost_usd"] is None
    total = result["usage"]["total"]
    assert total["input_tokens"] is None
    assert total["calls_without_usage"] == total["calls"] > 0
    assert total["cost_usd"] is None


def _without_usage(request: Recorded) -> Reply:
    """As :func:`_coordinate`, but the stream ends without a usage chunk, as a server does
    when it is not asked for usage."""
    reply = _coordinate(request)
    assert isinstance(reply, SseReply)
    parts = tuple(p for p in reply.parts if not (isinstance(p, bytes) and b'"usage"' in p))
    return SseReply(parts=parts)
