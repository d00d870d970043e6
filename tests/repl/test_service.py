"""The REPL's trio side, on its own."""

from __future__ import annotations

from pathlib import Path

from prompt_toolkit.formatted_text import StyleAndTextTuples

from conclave.actors.coordination.protocol import AnswerVerdict
from conclave.actors.events import EventHub
from conclave.actors.llm.pool import open_backends
from conclave.actors.run.driver import RunHandle
from conclave.config.resolver import ResolvedConfig
from conclave.runtime import SystemClosed
from conclave.ui.repl.protocol import Continue, Override
from conclave.ui.repl.service import ReplService
from conclave.ui.repl.state import ReplState
from tests.repl.harness import config


class _EndedRun:
    """A run handle whose run has ended: nobody answers a decision any more."""

    async def override(self, presenter: str) -> AnswerVerdict:
        raise SystemClosed("the run's actor system is closed")

    async def continue_(self) -> AnswerVerdict:
        raise SystemClosed("the run's actor system is closed")


async def test_a_decision_that_reaches_an_ended_run_says_so(tmp_path: Path) -> None:
    state = ReplState(agents=("agent-1",))
    printed: list[StyleAndTextTuples] = []
    async with open_backends() as pool:
        with EventHub() as hub:
            service = ReplService(
                resolved=ResolvedConfig(base=config(1)),
                state=state,
                post=lambda change: change(),
                printer=printed.append,
                log_root=tmp_path,
                backends=pool,
                hub=hub,
            )
            ended: RunHandle = _EndedRun()  # type: ignore[assignment]
            for decision in (Override(agent="agent-1"), Continue()):
                state.notice = ""
                await service._decide(ended, decision)
                assert state.notice == "the run ended before the decision reached it"
