"""Driving the REPL headless: its real application and trio guest, keys through a pipe,
output to nowhere.

The specs are synchronous tests (pytest-trio runs every ``async def`` test under trio, and
prompt-toolkit's host loop is asyncio): each calls :func:`play` with a scenario, which runs
under ``asyncio.run`` with a session of the REPL open. The scripted agents have no latency
unless a spec asks for some, so runs take milliseconds; waits poll the state with a deadline.

Every spec also checks that the screen's state was changed on the UI's thread only: the
runtime runs on a thread of its own and must hand each change over (a change made there
would race the redraw). A redraw asked for on another thread fails the spec.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import attrs
from prompt_toolkit.application.current import set_app
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput

from conclave.actors.llm.protocol import LLMBackend
from conclave.actors.run.result import RunResult
from conclave.actors.session.compaction import CompactionPolicy
from conclave.config.modes import ModeState
from conclave.config.resolver import ResolvedConfig
from conclave.config.schema import (
    AgentConfig,
    ConclaveConfig,
    OrchestratorConfig,
    ScriptedBackendConfig,
)
from conclave.ui.repl.app import Repl, run_session
from conclave.ui.repl.render import fragments_text
from conclave.ui.repl.session_commands import SessionStart
from conclave.ui.repl.state import ReplState

SHIFT_TAB = "\x1b[Z"
CTRL_O = "\x0f"
CTRL_C = "\x03"
CTRL_D = "\x04"
CTRL_R = "\x12"
ENTER = "\r"
ALT_A = "\x1ba"
ALT_R = "\x1br"
ALT_RIGHT = "\x1b[1;3C"
ESC = "\x1b"

DEADLINE = 60.0
"""Seconds a wait may take before the spec fails (runs take milliseconds)."""


def config(agents: int = 3, *, latency: float = 0.0, **orchestrator: object) -> ConclaveConfig:
    return ConclaveConfig(
        agents=tuple(
            AgentConfig(id=f"agent-{i}", backend=ScriptedBackendConfig(seed=i, latency=latency))
            for i in range(1, agents + 1)
        ),
        orchestrator=OrchestratorConfig(**{"quiet_period": None, **orchestrator}),  # type: ignore[arg-type]
    )


@attrs.define
class Session:
    repl: Repl
    keys: PipeInput
    log_root: Path

    @property
    def state(self) -> ReplState:
        return self.repl.state

    def press(self, *keys: str) -> None:
        for key in keys:
            self.keys.send_text(key)

    def type(self, line: str) -> None:
        """Type ``line`` and press Enter."""
        self.keys.send_text(line)
        self.keys.send_text(ENTER)

    async def until(self, condition: Callable[[], object], what: str) -> None:
        """Wait until ``condition()`` is true; fail naming ``what`` after the deadline."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DEADLINE
        while not condition():
            if loop.time() > deadline:
                raise AssertionError(
                    f"timed out waiting for {what}; notice: {self.state.notice!r}; "
                    f"screen so far:\n{self.transcript()}"
                )
            await asyncio.sleep(0.005)

    async def settle(self) -> None:
        """Let the keys sent so far be read and handled."""
        for _ in range(5):
            await asyncio.sleep(0.01)

    async def result_of(self, line: str) -> RunResult:
        """Type ``line``, continue with the vote's winner (Enter) if asked, and return the
        run's result once it has ended."""
        before = self.state.usage.runs
        self.type(line)
        await self.finish(before, line)
        result = self.state.last_result
        assert result is not None
        return result

    async def finish(self, before: int, what: str) -> None:
        """Wait for the run after ``before`` runs to end, pressing Enter at its vote."""
        state = self.state

        def ended_or_asked() -> bool:
            return state.usage.runs > before or state.override is not None

        while state.usage.runs <= before:
            await self.until(ended_or_asked, f"the run of {what!r}")
            if state.override is not None:
                self.press(ENTER)
                await self.until(
                    lambda: state.override is None or state.usage.runs > before, "continue"
                )

    def transcript(self) -> str:
        return "".join(fragments_text(block) for block in self.state.transcript)

    def render(self, part: Callable[[Repl], StyleAndTextTuples]) -> StyleAndTextTuples:
        with set_app(self.repl.app):
            return part(self.repl)


Scenario = Callable[[Session], Awaitable[None]]


def _redraws_off_thread(state: ReplState) -> list[str]:
    """The threads, other than this one (the UI's), that ask ``state`` for a redraw: a
    change of the state is followed by one."""
    ui_thread = threading.current_thread()
    redraw = state.on_change
    seen: list[str] = []

    def checked() -> None:
        if threading.current_thread() is not ui_thread:
            seen.append(threading.current_thread().name)
        redraw()

    state.on_change = checked
    return seen


@contextmanager
def _pipe() -> Iterator[PipeInput]:
    with create_pipe_input() as pipe:
        yield pipe


def play(
    scenario: Scenario,
    tmp_path: Path,
    *,
    conclave: ConclaveConfig | None = None,
    modes: ModeState | None = None,
    backend_factory: Callable[[AgentConfig], LLMBackend] | None = None,
    session_start: SessionStart | None = None,
    compaction: CompactionPolicy | None = None,
) -> ReplState:
    """Run ``scenario`` in a REPL session, then quit it (Ctrl+D) and wait until it has ended;
    the state as it was left. With ``session_start``, the conversation is recorded as a session
    (compacted by ``compaction``)."""
    chosen = conclave or config()
    log_root = tmp_path / "runs"

    async def main() -> ReplState:
        with _pipe() as keys:
            state = ReplState(agents=tuple(a.id for a in chosen.agents), modes=modes or ModeState())
            repl = Repl(state, input=keys, output=DummyOutput())
            repl.session_start, repl.compaction = session_start, compaction
            off_thread = _redraws_off_thread(state)
            session = Session(repl=repl, keys=keys, log_root=log_root)
            running = asyncio.ensure_future(
                run_session(
                    repl,
                    resolved=ResolvedConfig(base=chosen),
                    log_root=log_root,
                    backend_factory=backend_factory,
                )
            )
            await session.until(lambda: repl.connected or running.done(), "start-up")
            try:
                await scenario(session)
            finally:
                keys.send_text(CTRL_D)
                await asyncio.wait_for(running, DEADLINE)
            assert not off_thread, f"the screen's state changed on {off_thread[0]!r}"
            return state

    return asyncio.run(main())
