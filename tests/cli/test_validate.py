"""``conclave validate CONFIG [--json] [--check-endpoints]`` checks a config and exits: 0 and
one summary line if it is valid, 2 and every problem (one per line, with line, column and
field path) if not; warnings (an old key name, a key nobody set) never fail it.
``--check-endpoints`` sends one tiny request per endpoint and model, through the real
backends, against the loopback server of the backend tests.

No ``autojump_clock`` in the endpoint specs: they use real sockets and real time.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio
import yaml

from conclave.config.loader import load_config
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from conclave.ui.headless.validate import check_endpoints
from tests.cli.helpers import TASK, fast_agents, write_config
from tests.llm.loopback import LoopbackServer, Recorded, Reply, SseReply, open_loopback_server
from tests.llm.wire import anthropic_error, anthropic_reply, openai_error, openai_reply

KEY = "sk-test-RECOGNISABLE-0123456789abcdef"


def _write(path: Path, agents: list[dict[str, Any]], **orchestrator: Any) -> Path:
    data: dict[str, Any] = {"agents": agents}
    if orchestrator:
        data["orchestrator"] = orchestrator
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_a_good_config_validates(fast_config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(fast_config)]) == ExitCode.OK
    assert capsys.readouterr().out == (
        f"{fast_config}: ok (3 agents: agent-1, agent-2, agent-3; backends: 3 scripted; "
        "endpoints: none (offline))\n"
    )


def test_the_summary_counts_backends_and_names_endpoints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    openai = {"type": "openai", "model": "m", "api_key": "k"}
    cfg = _write(
        tmp_path / "c.yaml",
        [
            {"id": "a", "backend": openai},
            {"id": "b", "backend": openai | {"base_url": "http://127.0.0.1:8000/v1"}},
            {"id": "c", "backend": {"type": "anthropic", "model": "m", "api_key": "k"}},
            {"id": "d"},
        ],
    )
    assert main(["validate", str(cfg)]) == ExitCode.OK
    assert capsys.readouterr().out == (
        f"{cfg}: ok (4 agents: a, b, c, d; backends: 2 openai, 1 anthropic, 1 scripted; "
        "endpoints: api.openai.com, 127.0.0.1:8000, api.anthropic.com)\n"
    )


def test_a_bad_config_fails_validation_naming_the_field_and_valid_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(tmp_path / "bad.yaml", [{"id": "a", "misbehave": "sulk"}])

    assert main(["validate", str(cfg)]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert f"{cfg}:3:16: agents[0].backend.misbehave: misbehave 'sulk' is not one of: " in err
    assert "is not one of: no_call, both_calls" in err


BAD = """\
agents:
  - id: a
    backend: {type: opnai, model: m}
  - id: b
    backend: {latency: -1}
orchestrator:
  colour: red
"""


def test_every_problem_is_reported_at_once_one_per_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(BAD, encoding="utf-8")

    assert main(["validate", str(cfg)]) == ExitCode.USAGE
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert [line.split(": ", 2)[:2] for line in lines[:3]] == [
        [f"{cfg}:3:21", "agents[0].backend.type"],
        [f"{cfg}:5:24", "agents[1].backend.latency"],
        [f"{cfg}:7:3", "orchestrator.colour"],
    ]
    assert lines[0].endswith("did you mean 'openai'?")
    assert lines[3:] == [f"conclave: {cfg}: 3 problems; fix them and validate again"]


def test_an_unset_variable_and_a_duplicate_id_are_reported_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("UNSET_KEY", raising=False)
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(
        "agents:\n"
        "  - id: a\n"
        "    backend: {type: openai, model: m, api_key: '${UNSET_KEY}'}\n"
        "  - id: a\n",
        encoding="utf-8",
    )

    assert main(["validate", str(cfg)]) == ExitCode.USAGE
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(": ", 2)[:2] for line in lines[:2]] == [
        [f"{cfg}:3:48", "agents[0].backend.api_key"],
        [f"{cfg}:4:9", "agents[1].id"],
    ]
    assert lines[2:] == [f"conclave: {cfg}: 2 problems; fix them and validate again"]


def test_json_lists_every_problem_with_its_parts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(BAD, encoding="utf-8")

    assert main(["validate", "--json", str(cfg)]) == ExitCode.USAGE
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] is False
    assert report["warnings"] == []
    assert [e["path"] for e in report["errors"]] == [
        "agents[0].backend.type",
        "agents[1].backend.latency",
        "orchestrator.colour",
    ]
    assert report["errors"][0] == {
        "file": str(cfg),
        "line": 3,
        "column": 21,
        "path": "agents[0].backend.type",
        "message": "backend type 'opnai' is not available; valid backend types: scripted, "
        "openai, anthropic",
        "expected": "one of: scripted, openai, anthropic",
        "got": "opnai",
        "suggestion": "openai",
    }


def test_json_of_a_valid_config(fast_config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--json", str(fast_config)]) == ExitCode.OK
    assert json.loads(capsys.readouterr().out) == {"valid": True, "errors": [], "warnings": []}


def test_a_file_that_cannot_be_read_is_one_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.yaml"
    assert main(["validate", "--json", str(missing)]) == ExitCode.USAGE
    (error,) = json.loads(capsys.readouterr().out)["errors"]
    assert error["message"] == f"cannot read config {missing}: No such file or directory"


def test_round_timeout_is_a_deprecation_warning_not_a_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(tmp_path / "old.yaml", fast_agents(1), round_timeout=30)

    assert main(["validate", str(cfg)]) == ExitCode.OK
    err = capsys.readouterr().err
    assert "conclave: warning: " in err
    assert "orchestrator.round_timeout: 'round_timeout' is the old name of 'call_timeout'" in err
    assert load_config(cfg).orchestrator.call_timeout == 30.0


def test_warnings_are_shown_with_the_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(tmp_path / "old.yaml", [{"id": "a", "jitter": 2}], round_timeout=30)

    assert main(["validate", "--json", str(cfg)]) == ExitCode.USAGE
    report = json.loads(capsys.readouterr().out)
    assert [w["path"] for w in report["warnings"]] == ["orchestrator.round_timeout"]
    assert [e["path"] for e in report["errors"]] == ["agents[0].backend.jitter"]


def test_an_omitted_key_whose_variable_is_unset_is_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    backend = {"type": "openai", "model": "m"}
    cfg = _write(tmp_path / "c.yaml", [{"id": "a", "backend": backend}, {"id": "b"}])

    assert main(["validate", "--json", str(cfg)]) == ExitCode.OK
    (warning,) = json.loads(capsys.readouterr().out)["warnings"]
    assert warning["path"] == "agents[0].backend"
    assert warning["line"] == 4
    assert "neither is the environment variable OPENAI_API_KEY" in warning["message"]


def test_a_run_in_which_no_agent_has_a_key_is_refused_before_it_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    backend = {"type": "openai", "model": "m"}
    cfg = _write(
        tmp_path / "c.yaml", [{"id": "a", "backend": backend}, {"id": "b", "backend": backend}]
    )

    code = main(["run", "--config", str(cfg), "--log-dir", str(tmp_path / "run"), TASK])

    assert code == ExitCode.USAGE
    assert "no API key for 2 agents (a, b)" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()  # nothing started


def test_a_run_in_which_some_agents_have_no_key_goes_on_without_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    scripted = {"type": "scripted", "latency": 0}
    agents = [
        {"id": "a", "backend": {"type": "openai", "model": "m"}},
        {"id": "b", "backend": scripted},
        {"id": "c", "backend": scripted},
    ]
    cfg = _write(tmp_path / "c.yaml", agents)

    code = main(["run", "--config", str(cfg), "--output-format", "json", TASK])

    result = json.loads(capsys.readouterr().out)
    assert code == ExitCode.OK
    assert "no API key" in result["failed_agents"]["a"]


def test_no_key_warning_when_the_variable_is_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-set")
    cfg = _write(tmp_path / "c.yaml", [{"id": "a", "backend": {"type": "openai", "model": "m"}}])

    assert main(["validate", "--json", str(cfg)]) == ExitCode.OK
    assert json.loads(capsys.readouterr().out)["warnings"] == []


def test_no_key_warning_for_a_server_on_this_machine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    backend = {"type": "openai", "model": "m", "base_url": "http://localhost:11434/v1"}
    cfg = _write(tmp_path / "c.yaml", [{"id": "a", "backend": backend}])

    assert main(["validate", "--json", str(cfg)]) == ExitCode.OK
    assert json.loads(capsys.readouterr().out)["warnings"] == []


def test_validate_refuses_all_to_all_past_256_agents_as_run_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(tmp_path / "big.yaml", fast_agents(257), visibility="all")

    assert main(["validate", str(cfg)]) == ExitCode.USAGE
    validate_error = capsys.readouterr().err
    assert main(["run", "--config", str(cfg), TASK]) == ExitCode.USAGE
    run_error = capsys.readouterr().err
    message = "orchestrator.visibility: visibility 'all' with 257 agents is all-to-all"
    assert f"{cfg}:1032:15: {message}" in validate_error  # at the line of the value
    assert f"{cfg}: {message}" in run_error  # after the run's flags: no line to point at


def test_validate_refuses_islands_as_large_as_the_run_as_all_to_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(tmp_path / "big.yaml", fast_agents(300), visibility="islands:300")

    assert main(["validate", str(cfg)]) == ExitCode.USAGE
    assert "visibility 'islands:300' with 300 agents is all-to-all" in capsys.readouterr().err


def test_validate_refuses_a_scripted_vote_for_an_agent_that_does_not_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agents = fast_agents(3)
    agents[1]["vote"] = "agent7"
    cfg = write_config(tmp_path / "c.yaml", agents)

    assert main(["validate", str(cfg)]) == ExitCode.USAGE
    assert (
        "agents[1].backend.vote: agent 'agent-2' votes for agent7, but the run has 3 agents "
        "(agent1 to agent3, in config order)"
    ) in capsys.readouterr().err


def test_run_refuses_a_scripted_vote_for_an_agent_that_does_not_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agents = fast_agents(3)
    agents[1]["vote"] = "agent7"
    cfg = write_config(tmp_path / "c.yaml", agents)

    assert main(["run", "--config", str(cfg), TASK]) == ExitCode.USAGE
    assert "votes for agent7, but the run has 3 agents" in capsys.readouterr().err


def test_validate_names_a_few_agents_and_counts_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(tmp_path / "many.yaml", fast_agents(1000), visibility="ring")

    assert main(["validate", str(cfg)]) == ExitCode.OK
    assert capsys.readouterr().out == (
        f"{cfg}: ok (1,000 agents: agent-1, agent-2, agent-3, agent-4, agent-5 and 995 more; "
        "backends: 1,000 scripted; endpoints: none (offline))\n"
    )


# -- --check-endpoints ----------------------------------------------------------------------


@pytest.fixture
async def server() -> AsyncIterator[LoopbackServer]:
    async with open_loopback_server() as running:
        yield running


def _answer(request: Recorded) -> Reply:
    if request.path.endswith("/chat/completions"):
        return SseReply(parts=tuple(openai_reply("OK", finish="length")))
    return anthropic_reply("OK", stop_reason="max_tokens")


def _http_agents(server: LoopbackServer, **common: Any) -> list[dict[str, Any]]:
    settings = {"api_key": KEY, "max_retries": 0, "timeouts": {"connect": 5, "stall": 5}}
    settings |= common
    openai = {"type": "openai", "base_url": f"{server.url}/v1"} | settings
    anthropic = {"type": "anthropic", "base_url": server.url} | settings
    return [
        {"id": "alice", "backend": openai | {"model": "gpt-a"}},
        {"id": "bob", "backend": openai | {"model": "gpt-a"}},
        {"id": "carol", "backend": openai | {"model": "gpt-c"}},
        {"id": "dave", "backend": anthropic | {"model": "claude-d"}},
        {"id": "eve"},
    ]


async def _validate(*args: str) -> int:
    """``conclave validate`` in a worker thread: it runs trio itself, while the server runs
    in the test's own trio loop."""
    return await trio.to_thread.run_sync(main, ["validate", *args])


async def test_check_endpoints_sends_one_tiny_request_per_endpoint_and_model(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.handler = _answer
    cfg = _write(tmp_path / "c.yaml", _http_agents(server))

    assert await _validate("--check-endpoints", str(cfg)) == ExitCode.OK
    out = capsys.readouterr().out.splitlines()
    host = server.url.removeprefix("http://")
    assert [line.split(": ok in ")[0] for line in out[:3]] == [
        f"{cfg}: endpoint {host} (openai, model gpt-a; agents alice, bob)",
        f"{cfg}: endpoint {host} (openai, model gpt-c; agent carol)",
        f"{cfg}: endpoint {host} (anthropic, model claude-d; agent dave)",
    ]
    assert out[3].startswith(f"{cfg}: ok (5 agents")
    sent = sorted((r.path, r.json["model"]) for r in server.requests)
    assert sent == [("/v1/chat/completions", "gpt-a"), ("/v1/chat/completions", "gpt-c"),
                    ("/v1/messages", "claude-d")]  # fmt: skip
    assert all(
        r.json.get("max_completion_tokens", r.json.get("max_tokens")) == 1 for r in server.requests
    )


async def test_a_refused_key_fails_the_check_as_a_config_problem_without_showing_the_key(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def refuse(request: Recorded) -> Reply:
        message = f"Incorrect API key provided: {KEY}."
        if request.path.endswith("/chat/completions"):
            return openai_error(401, message, code="invalid_api_key")
        return anthropic_error(401, "authentication_error", message)

    server.handler = refuse
    cfg = _write(tmp_path / "c.yaml", _http_agents(server)[3:])

    assert await _validate("--check-endpoints", str(cfg)) == ExitCode.USAGE
    captured = capsys.readouterr()
    assert "(anthropic, model claude-d; agent dave): failed (fatal): " in captured.out
    assert f"{cfg}:4:5: agents[0].backend: the endpoint check of " in captured.err
    assert "check base_url, the key and the model" in captured.err
    assert KEY not in captured.out + captured.err


async def test_an_endpoint_failing_for_its_own_reasons_exits_1(
    server: LoopbackServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.handler = lambda request: openai_error(500, "the server broke")
    cfg = _write(tmp_path / "c.yaml", _http_agents(server)[2:3])

    assert await _validate("--check-endpoints", "--json", str(cfg)) == ExitCode.FAILED
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] is False
    (endpoint,) = report["endpoints"]
    assert (endpoint["agents"], endpoint["ok"], endpoint["error_class"]) == (
        ["carol"],
        False,
        "transient",
    )
    assert report["errors"][0]["path"] == "agents[0].backend"


async def test_an_unreachable_endpoint_is_a_fatal_check_failure(tmp_path: Path) -> None:
    async with open_loopback_server() as gone:
        url = gone.url  # a port nothing listens on once the server has closed
    backend = {"type": "openai", "model": "m", "base_url": f"{url}/v1", "max_retries": 0}
    config = load_config(_write(tmp_path / "c.yaml", [{"id": "a", "backend": backend}]))

    (check,) = await check_endpoints(config)
    assert (check.ok, check.error_class) == (False, "fatal")


async def test_an_endpoint_that_does_not_answer_in_time_fails_the_check(
    server: LoopbackServer, tmp_path: Path
) -> None:
    async def never(request: Recorded) -> Reply:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    server.handler = never
    config = load_config(_write(tmp_path / "c.yaml", _http_agents(server)[2:3]))

    (check,) = await check_endpoints(config, limit=0.2)
    assert (check.error_class, check.message) == ("transient", "no reply within 0.2 s")


async def test_no_endpoint_is_checked_when_the_config_has_problems(
    server: LoopbackServer, tmp_path: Path
) -> None:
    agents = _http_agents(server)
    agents[0]["backend"]["max_concurrency"] = 0
    cfg = _write(tmp_path / "c.yaml", agents)

    assert await _validate("--check-endpoints", str(cfg)) == ExitCode.USAGE
    assert server.requests == []
