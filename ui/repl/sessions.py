"""The REPL's session: every turn, run, mode change and compaction recorded as it happens,
and a session resumed with its history and modes.

A new session is created at the first thing worth recording (a REPL opened and left at once
leaves nothing behind); its first entry is the mode state on the bar and who set it. A
session that cannot be written is said once, and the REPL goes on without one.

Resuming (``conclave -c``, ``--resume``, ``/resume``) replaces the conversation's history by
the session's (compactions applied), puts its last mode state back (recorded as a ``restore``
change; ``--mode`` given on the command line still wins), prints its latest exchanges, and
says in one line what was restored.

Compaction (``/compact``, and after a turn once the last call's reported input tokens pass
the policy's threshold) summarises through the active agent's backend; see
:mod:`actors.session.compaction`.

Threads: the session lives on the runtime's thread, with the service whose conversation
(:attr:`~ui.repl.service.ReplService.history`) it restores and compacts. What the screen
shows changes only through the service (:meth:`~ui.repl.service.ReplService.show`); a mode
changed on the UI's thread is handed here through the trio token before it is recorded, so
the session's file is written by one thread only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TypeVar

import trio
from prompt_toolkit.formatted_text import StyleAndTextTuples

from conclave.actors.agent.events import LlmRequestFinished
from conclave.actors.events import DomainEvent
from conclave.actors.llm.errors import LLMError
from conclave.actors.run.result import RunResult
from conclave.actors.session.compaction import (
    CompactionFailed,
    CompactionPolicy,
    compact,
    due,
)
from conclave.actors.session.entries import CompactionTrigger, UserTurn
from conclave.actors.session.entries import PlanDecision as SessionPlanDecision
from conclave.actors.session.history import Conversation
from conclave.actors.session.migrations import SessionTooNew
from conclave.actors.session.recorder import LastCallTokens, SessionRecorder
from conclave.actors.session.store import SessionError, find_session, open_session
from conclave.config.modes import ModeSource, ModeState
from conclave.config.wording import plural
from conclave.ui.repl.plan_dialog import Approve, PlanDecision, Revise
from conclave.ui.repl.protocol import Submit
from conclave.ui.repl.service import Printer, ReplService
from conclave.ui.repl.session_commands import SessionStart
from conclave.ui.repl.state import Dialog
from conclave.ui.sessions import prune_old_sessions, restored_modes, restored_notice

__all__ = ["ReplSession", "open_repl_session"]

T = TypeVar("T")

SHOWN_ON_RESUME = 10
"""The latest exchanges a resumed session prints (older ones are counted)."""


class ReplSession:
    """See the module docstring. Build it with :func:`open_repl_session`."""

    def __init__(
        self,
        *,
        service: ReplService,
        printer: Printer,
        start: SessionStart,
        policy: CompactionPolicy,
    ) -> None:
        self._service = service
        self._agents = service.state.agents
        """The configured agents (fixed for the session)."""
        self._modes = service.state.modes
        """The modes on the bar as last heard from the UI's thread."""
        self._print = printer
        self._start = start
        self.policy = policy
        self._source = start.source
        self._recorder: SessionRecorder | None = None
        self._open: contextlib.ExitStack | None = None
        self._broken = False
        self._turn: UserTurn | None = None
        self._tokens = LastCallTokens()

    # -- recording ---------------------------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        return self._recorder.id if self._recorder is not None else None

    def mode_changed(self, modes: ModeState, source: ModeSource) -> None:
        """The modes changed on the bar (called on the runtime's thread)."""
        self._modes = modes
        recorder = self._recorder
        if recorder is None:
            self._source = source  # recorded with the session's first entry
            return
        self._guard(lambda: recorder.mode(modes, source))

    def turn_started(self, submit: Submit) -> None:
        self._tokens = LastCallTokens()
        self._modes = submit.modes
        recorder = self._ensure()
        self._turn = None
        if recorder is not None:
            self._turn = self._guard(lambda: recorder.user_turn(submit.task))

    def saw(self, event: DomainEvent) -> None:
        if isinstance(event, LlmRequestFinished):
            self._tokens.record(event)

    def turn_ended(self, submit: Submit, result: RunResult) -> None:
        recorder, turn = self._recorder, self._turn
        if recorder is not None and turn is not None:
            tokens = self._tokens.input_tokens
            self._guard(lambda: recorder.run_ended(turn, result, input_tokens=tokens))
        self._turn = None

    def run_launched(self, result: RunResult) -> None:
        recorder, turn = self._recorder, self._turn
        if recorder is not None and turn is not None:
            tokens = self._tokens.input_tokens
            self._guard(lambda: recorder.run_ended(turn, result, input_tokens=tokens))
        self._tokens = LastCallTokens()

    def replied(self, text: str, *, input_tokens: int | None) -> None:
        recorder, turn = self._recorder, self._turn
        if recorder is not None and turn is not None:
            self._guard(lambda: recorder.reply(turn, text, input_tokens=input_tokens))
        self._turn = None

    def plan_proposed(self, plan: str, *, run_id: str) -> None:
        recorder = self._recorder
        if recorder is not None:
            version = recorder.plan_versions + 1
            self._guard(lambda: recorder.plan(version=version, plan=plan, run_id=run_id))

    def plan_decided(self, decision: PlanDecision) -> None:
        recorder = self._recorder
        if recorder is None or not recorder.plan_versions:
            return
        version = recorder.plan_versions
        if isinstance(decision, Approve):
            kind, feedback = SessionPlanDecision.APPROVED, decision.additions
        elif isinstance(decision, Revise):
            kind, feedback = SessionPlanDecision.REVISED, decision.feedback
        else:
            kind, feedback = SessionPlanDecision.CANCELLED, ""
        self._guard(
            lambda: recorder.plan_decided(version=version, decision=kind, feedback=feedback.strip())
        )

    def _ensure(self) -> SessionRecorder | None:
        """The session, created now if there is none yet (``None`` if it cannot be)."""
        if self._recorder is not None or self._broken:
            return self._recorder
        stack = contextlib.ExitStack()
        try:
            session = stack.enter_context(open_session(self._start.root))
        except SessionError as exc:
            self._broken = True
            self._warn(f"this conversation is not saved as a session: {exc}")
            return None
        self._adopt(stack, SessionRecorder(session))
        self._guard(
            lambda: self._recorder.mode(self._modes, self._source) if self._recorder else None
        )
        return self._recorder

    def _adopt(self, stack: contextlib.ExitStack, recorder: SessionRecorder) -> None:
        self.close()
        self._open, self._recorder = stack, recorder
        self._service.show(session_id=recorder.id)

    def _guard(self, record: Callable[[], T]) -> T | None:
        """Record, or (once) say why the session can no longer be written and stop."""
        try:
            return record()
        except SessionError as exc:
            self._warn(f"{exc}; this conversation is no longer saved")
            self._broken = True
            self.close()
            return None

    def cleared(self) -> None:
        self.close()
        self._broken = False
        self._source = ModeSource.COMMAND
        self._service.show(session_id=None)

    def close(self) -> None:
        stack, self._open, self._recorder = self._open, None, None
        if stack is not None:
            stack.close()

    # -- resuming ----------------------------------------------------------------------------

    def resume(self, wanted: str) -> None:
        stack = contextlib.ExitStack()
        try:
            session_id = find_session(self._start.root, wanted)
            if session_id == self.session_id:
                self._service.tell(f"session {session_id} is the one open")
                return
            session = stack.enter_context(open_session(self._start.root, session_id))
        except (SessionError, SessionTooNew) as exc:
            stack.close()
            self._error(f"cannot resume: {exc}")
            return
        recorder = SessionRecorder(session)
        self._broken = False
        self._adopt(stack, recorder)
        conversation = recorder.conversation
        problems = session.log().problems()
        if problems is not None:
            self._warn(problems)
        self._show(conversation)
        self._service.set_history(conversation.history())
        modes = self._restored_modes(conversation)
        notice = restored_notice(session_id, conversation, modes)
        if modes is not None:
            self._modes = modes
            self._service.show(modes=modes)
            self._guard(lambda: recorder.mode(modes, ModeSource.RESTORE, always=True))
        self._print([("class:notice", notice + "\n")])
        self._service.tell(notice)

    def _restored_modes(self, conversation: Conversation) -> ModeState | None:
        modes = restored_modes(conversation, self._agents, warn=self._warn)
        if modes is None:
            return None
        return self._start.flags.over(modes, mine=self._modes)

    def _show(self, conversation: Conversation) -> None:
        exchanges = conversation.exchanges
        older = len(exchanges) - SHOWN_ON_RESUME
        block: StyleAndTextTuples = []
        if older > 0:
            block.append(("class:notice", f"({plural(older, 'earlier turn')})\n"))
        for exchange in exchanges[-SHOWN_ON_RESUME:]:
            block += [("class:prompt", "> "), ("class:user", exchange.user.text + "\n")]
            answer = exchange.answer
            block.append(("", (answer if answer is not None else "(no answer)") + "\n"))
        if block:
            self._print(block)

    def open_picker(self) -> None:
        from conclave.ui.repl.session_commands import session_choices

        choices = session_choices(self._start.root, current=self.session_id)
        if not choices:
            self._service.tell("no session in this directory to resume: this one starts anew")
            return
        self._service.show(session_choices=choices, dialog=Dialog.SESSIONS, selected=0)

    # -- compaction --------------------------------------------------------------------------

    async def after_turn(self) -> None:
        recorder = self._recorder
        if recorder is not None and due(recorder.conversation, self.policy):
            self._service.show(running=True, status="Compacting")
            await self._compact(recorder, CompactionTrigger.AUTOMATIC, "")

    async def compact(self, instructions: str) -> None:
        recorder = self._recorder
        if recorder is None:
            self._service.tell("nothing to compact yet: no turn has been recorded")
            return
        await self._compact(recorder, CompactionTrigger.MANUAL, instructions)

    async def _compact(
        self, recorder: SessionRecorder, trigger: CompactionTrigger, instructions: str
    ) -> None:
        agents = {a.id: a for a in self._service.resolved.base.agents}
        active = self._modes.active_agent or self._agents[0]
        agent = agents.get(active) or next(iter(agents.values()))
        try:
            backend = await self._service.backend_for(agent)
            entry = await compact(
                recorder,
                backend,
                preserve_recent=self.policy.preserve_recent,
                trigger=trigger,
                instructions=instructions,
            )
        except (LLMError, CompactionFailed, SessionError) as exc:
            self._error(f"compaction failed: {exc}; the conversation is unchanged")
            return
        if entry is None:
            kept = plural(self.policy.preserve_recent, "latest exchange")
            self._service.tell(f"nothing to compact: the {kept} stay verbatim")
            return
        self._service.set_history(recorder.conversation.history())
        how = "compacted" if trigger is CompactionTrigger.MANUAL else "automatically compacted"
        self._print(
            [
                (
                    "class:notice",
                    f"{how} the conversation: older turns summarised, "
                    f"{plural(self.policy.preserve_recent, 'latest exchange')} kept verbatim; "
                    f"history ~{entry.tokens_before:,} → ~{entry.tokens_after:,} tokens\n",
                )
            ]
        )

    # -- messages ----------------------------------------------------------------------------

    def _warn(self, text: str) -> None:
        self._print([("class:notice", text + "\n")])

    def _error(self, text: str) -> None:
        self._print([("class:error", text + "\n")])


@contextlib.contextmanager
def open_repl_session(
    service: ReplService, *, printer: Printer, start: SessionStart, policy: CompactionPolicy
) -> Iterator[ReplSession]:
    """The REPL's session, attached to ``service`` (and the state's mode changes) and closed
    on leaving; old sessions pruned, and the one asked for resumed or its picker opened."""
    session = ReplSession(service=service, printer=printer, start=start, policy=policy)
    service.sessions = session
    token = trio.lowlevel.current_trio_token()
    state = service.state

    def to_runtime(modes: ModeState, source: ModeSource) -> None:
        with contextlib.suppress(trio.RunFinishedError):  # changed after the runtime ended
            token.run_sync_soon(session.mode_changed, modes, source)

    def hooked() -> None:
        state.mode_changed = to_runtime

    service.post(hooked)
    try:
        prune_old_sessions(start.root, service.resolved.base)
        if start.resume == "":
            session.open_picker()
        elif start.resume is not None:
            session.resume(start.resume)
        yield session
    finally:
        service.sessions = None
        session.close()
