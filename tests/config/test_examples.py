"""Every example in config/examples/ validates with no API key set (a missing key is only a
warning) and touches no network; the openai and anthropic examples pass the endpoint check
when their *_BASE_URL points at the loopback test server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from conclave.config.loader import load_config
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from tests.llm.loopback import LoopbackServer, Recorded, Reply, SseReply, open_loopback_server
from tests.llm.wire import anthropic_reply, openai_reply

EXAMPLES = Path(__file__).parents[2] / "config" / "examples"
ALL = sorted(EXAMPLES.glob("*.yaml"))
KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY")
BASE_URLS = ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "LOCAL_BASE_URL", "LOCAL_MODEL")


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEY_VARIABLES + BASE_URLS:
        monkeypatch.delenv(name, raising=False)


def test_the_examples_cover_every_documented_setup() -> None:
    assert [p.stem for p in ALL] == [
        "anthropic",
        "interactive",
        "local",
        "mcp",
        "mixed",
        "openai",
        "openrouter",
        "permissions",
        "questions",
        "three_scripted",
    ]


@pytest.mark.parametrize("example", ALL, ids=[p.stem for p in ALL])
def test_every_example_validates_without_keys(
    example: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", "--json", str(example)]) == ExitCode.OK
    report = json.loads(capsys.readouterr().out)
    assert report["errors"] == []
    assert all("no API key" in w["message"] for w in report["warnings"])


def test_the_mcp_example_offers_filesystem_and_git_servers_to_scripted_agents() -> None:
    config = load_config(EXAMPLES / "mcp.yaml")

    assert [s.name for s in config.mcp_servers] == ["fs", "git"]
    steps = [s.tool for a in config.agents for s in a.backend.tool_steps]  # type: ignore[union-attr]
    assert {t.split("__")[1] for t in steps} == {"fs", "git"}


def test_the_permissions_example_lets_writes_run_and_makes_the_delete_ask() -> None:
    from conclave.actors.tools.permissions import Permissions, Verdict, subjects_of

    config = load_config(EXAMPLES / "permissions.yaml")
    permissions = Permissions.from_config(config.permissions)
    verdicts = [
        permissions.rule(
            step.tool, read_only=False, subjects=subjects_of(step.arguments, Path("/w"))
        ).verdict
        for step in config.agents[0].backend.tool_steps  # type: ignore[union-attr]
    ]
    assert verdicts == [Verdict.ALLOW, Verdict.ALLOW, Verdict.ASK]


def test_the_openrouter_example_sends_its_ranking_headers() -> None:
    backend = load_config(EXAMPLES / "openrouter.yaml").agents[1].backend
    assert backend.type == "openai"
    assert set(backend.extra_headers) == {"HTTP-Referer", "X-Title"}
    assert backend.base_url == "https://openrouter.ai/api/v1"


@pytest.fixture
async def server() -> AsyncIterator[LoopbackServer]:
    async with open_loopback_server() as running:

        def answer(request: Recorded) -> Reply:
            if request.path.endswith("/chat/completions"):
                return SseReply(parts=tuple(openai_reply("OK", finish="length")))
            return anthropic_reply("OK", stop_reason="max_tokens")

        running.handler = answer
        yield running


@pytest.mark.parametrize(
    ("example", "variable", "path"),
    [
        ("openai.yaml", "OPENAI_BASE_URL", "/v1"),
        ("anthropic.yaml", "ANTHROPIC_BASE_URL", ""),
        ("local.yaml", "LOCAL_BASE_URL", "/v1"),
    ],
)
async def test_an_example_pointed_at_a_server_passes_the_endpoint_check(
    server: LoopbackServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    example: str,
    variable: str,
    path: str,
) -> None:
    monkeypatch.setenv(variable, server.url + path)
    args = ["validate", "--check-endpoints", str(EXAMPLES / example)]

    assert await trio.to_thread.run_sync(main, args) == ExitCode.OK
    assert capsys.readouterr().out.count(": ok in ") >= 1
    assert server.requests


def test_the_questions_example_asks_one_question_of_each_severity() -> None:
    config = load_config(EXAMPLES / "questions.yaml")

    [agent] = config.agents
    steps = agent.backend.tool_steps  # type: ignore[union-attr]
    assert [s.tool for s in steps] == ["ask_user"] * 3
    assert [s.arguments["severity"] for s in steps] == ["critical", "major", "minor"]
