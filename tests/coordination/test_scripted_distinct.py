"""The default scripted agents write distinct answers at any N, so the coordinator (which
refuses exact duplicates) never turns a healthy agent away; and the same config writes the
same text, run after run."""

from __future__ import annotations

import attrs

from conclave.actors.llm.scripted import ScriptedBackend
from conclave.actors.prompts.coordination import PromptView, parse_prompt, round_messages
from conclave.config.schema import ConclaveConfig, ScriptedBackendConfig, default_config
from tests.coordination.helpers import TASK, Recorder, run_tapped


def _backends(cfg: ConclaveConfig) -> list[ScriptedBackend]:
    backends = []
    for m in cfg.agents:
        assert isinstance(m.backend, ScriptedBackendConfig)
        backends.append(
            ScriptedBackend(agent_id=m.id, persona=m.persona, policy=m.backend, seed=m.backend.seed)
        )
    return backends


def _views(cfg: ConclaveConfig) -> list[PromptView]:
    """Each agent's first prompt; anonymous ids follow the sorted config ids."""
    anonymous = {
        member: f"agent{i}" for i, member in enumerate(sorted(a.id for a in cfg.agents), 1)
    }
    return [
        parse_prompt(
            round_messages(
                me=anonymous[m.id],
                agents=len(cfg.agents),
                task=TASK,
                answers=(),
                tools=["new_answer", "vote"],
                persona=m.persona,
            )
        )
        for m in cfg.agents
    ]


def test_ten_thousand_default_agents_compose_distinct_first_answers() -> None:
    cfg = default_config(10_000)

    texts = [b.compose(v, revision=1) for b, v in zip(_backends(cfg), _views(cfg), strict=True)]

    assert len(set(texts)) == 10_000


def test_every_revision_of_ten_thousand_default_agents_is_distinct() -> None:
    cfg = default_config(10_000)
    pairs = list(zip(_backends(cfg), _views(cfg), strict=True))

    texts = [b.compose(v, revision=r) for b, v in pairs for r in (1, 2, 3)]

    assert len(set(texts)) == 30_000


def test_the_same_config_composes_the_same_text() -> None:
    cfg = default_config(50)

    first = [b.compose(v, revision=1) for b, v in zip(_backends(cfg), _views(cfg), strict=True)]
    again = [b.compose(v, revision=1) for b, v in zip(_backends(cfg), _views(cfg), strict=True)]

    assert first == again


async def test_a_run_of_three_hundred_default_agents_turns_no_answer_away(
    autojump_clock: object,
) -> None:
    cfg = default_config(300)
    cfg = attrs.evolve(cfg, orchestrator=attrs.evolve(cfg.orchestrator, visibility="ring"))
    recorder = Recorder()

    run = await run_tapped(cfg, backend_factory=recorder)

    assert run.result.termination == "completed"
    assert run.result.failed_agents == {}
    assert len({a.content for a in run.result.answers}) == len(run.result.answers) >= 300
    # no answer was refused, not even once before a retry got through
    assert not any(
        m.content.startswith("Error:")
        for backend in recorder.backends.values()
        for request in backend.requests
        for m in request.messages
    )
