"""The server's runs: started by clients, outliving them, watched by any number of them.

:class:`RunRegistry` starts each run as the REPL's service does (:mod:`ui.repl.service`): a
:class:`~actors.run.spec.RunSpec` from the server's resolved config finished for the client's
modes (:meth:`config.resolver.ResolvedConfig.for_modes`, as every front end's runs are), the
server's backend pool (connections stay warm across runs), an :class:`EventHub` per run, and
:func:`~actors.run.driver.drive` in a task of the registry's nursery, not of the client's:
a client that disconnects does not stop the run. The run's :class:`RunFeed` (a synchronous
subscriber of its hub) turns its events into stream-json lines for every watcher.

The override window: a run started with ``override_window`` has a gate that publishes an
``override_window`` line and waits; ``override`` or ``continue`` from any client reaches the
coordinator through :meth:`RunHandle.override` / :meth:`RunHandle.continue_`, whose verdict
says whether it was taken. ``after`` continues a conversation: the earlier run's turns and
its own task and answer become the new run's history, as the REPL's second turn does.

Questions and approvals go to the run's watchers the same way: a ``question_asked`` line
(an event) or an ``approval_requested`` line (a tool call the permission mode says must ask,
:mod:`actors.human.tool_approval`) waits for an ``answer`` or ``approve`` from any
authenticated client, one at a time, and the open one is in late joiners' snapshots. Nobody
answering within ``decision_timeout`` takes the question's default, or denies the call (the
model is told nobody answered). "Allow for this session" lasts the run and the runs
continuing it (``after``).

Finished runs are kept (their feed's snapshot and ``result`` line) up to
:attr:`ServeSettings.keep_finished`, for late subscribers and ``after``.
"""

from __future__ import annotations

import io
import json
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import trio

from conclave.actors.events import EventHub
from conclave.actors.human.gate import Accept, OverrideChoice, OverrideRequest
from conclave.actors.human.questions import PendingQuestion, Reply
from conclave.actors.human.tool_approval import ToolDecision
from conclave.actors.llm.pool import BackendPool
from conclave.actors.run.driver import RunHandle, RunSpec, drive, not_started
from conclave.actors.run.result import RunResult, Termination
from conclave.actors.run.turn import Turn
from conclave.actors.tools.permissions import SessionAllowances
from conclave.config.modes import AgentMode, ModeState, UnknownAgent
from conclave.config.problems import ConfigError
from conclave.config.resolver import ResolvedConfig
from conclave.config.schema import ConclaveConfig
from conclave.config.wording import plural
from conclave.runtime import ConclaveRuntimeError
from conclave.ui.progress import RunClock, StreamJson
from conclave.ui.serve.asking import (
    WatcherApprovals,
    WatcherQuestions,
    decision_of,
    question_fields,
)
from conclave.ui.serve.encoding import FrameEncoding, encoded_frame
from conclave.ui.serve.feed import Capture, RunFeed
from conclave.ui.serve.protocol import (
    Answer,
    Approval,
    ApprovalRequested,
    Approve,
    Correct,
    ErrorCode,
    OverrideWindow,
    ProtocolError,
    Snapshot,
    StartRun,
    Verdict,
    encode_server,
    encode_snapshot,
    with_request_id,
)

__all__ = ["RunRegistry", "ServeSettings", "ServedRun"]


@attrs.frozen(kw_only=True)
class ServeSettings:
    """What ``conclave serve``'s flags decide, for the server and its runs."""

    resolved: ResolvedConfig
    """The config every run starts from (before the client's modes), from the flags."""
    token: str
    log_root: Path
    """Each run's log directory is made here: ``<log_root>/<run_id>/events.jsonl``."""
    allowed_origins: frozenset[str] = frozenset()
    """``Origin`` values a browser page may connect from; a request without one (not from a
    browser) is always let through to the token check."""
    max_runs: int = 4
    """Runs at once; a ``start_run`` beyond it gets ``busy``."""
    keep_finished: int = 64
    client_buffer: int = 8192
    """Lines a client may have unread in a run's feed before it is dropped."""
    flush_interval: float = 0.02
    """A run's lines are sent at once after a quiet spell, and at most once per this many
    seconds during a burst (coalesced into one frame, the same for every watcher)."""
    fanout_rate: float = 1000.0
    """Frames a second a run sends to all its watchers together, at most, during a burst:
    with more watchers than ``fanout_rate * flush_interval`` (20), frames come further
    apart (100 watchers: every 100 ms), so the fan-out's cost to the run stays bounded: on 2
    cores, 100 watchers of a 1,000-agent run cost it about 3 % more CPU at 1,000 a second,
    14 % at 2,000 (more frames, more writes and more wake-ups of the clients)."""
    frame_bytes: int = 256 * 1024
    """About the most a frame holds (a longer line goes alone)."""
    auth_timeout: float = 10.0
    """Seconds a connection without a token has to send ``auth``."""
    shutdown_grace: float = 5.0
    """On stopping: seconds for clients to receive the cancelled runs' last lines."""


class _ClientGate:
    """The override window of a served run: announced to its watchers, then decided by a
    client (the coordinator cancels this wait) or, after ``timeout``, the vote stands."""

    def __init__(self, run: ServedRun, timeout: float | None) -> None:
        self._run = run
        self._timeout = timeout

    async def override(self, request: OverrideRequest) -> OverrideChoice:
        self._run._window_opened(request)
        try:
            if self._timeout is None:
                await trio.sleep_forever()
            await trio.sleep(self._timeout)
            return Accept()
        finally:
            self._run._window_closed()


class ServedRun:
    """One run of the server: its spec, feed, handle (once open) and result (once over)."""

    def __init__(self, *, run_id: str, spec: RunSpec, feed: RunFeed, hub: EventHub) -> None:
        self.run_id = run_id
        self.spec = spec
        self.feed = feed
        self.hub = hub
        self.handle: RunHandle | None = None
        self.result: RunResult | None = None
        self.ended = trio.Event()
        self._cancel_asked = False
        self._snapshot: tuple[Capture, str, dict[FrameEncoding, bytes]] | None = None
        self._result_frames: dict[FrameEncoding, bytes] = {}
        self._question: tuple[PendingQuestion, trio.MemorySendChannel[Reply]] | None = None
        """The question its watchers may answer now, and where the answer goes."""
        self._approval: tuple[Approval, trio.MemorySendChannel[ToolDecision]] | None = None
        """The tool call its watchers may decide now, and where the decision goes."""

    @property
    def history(self) -> tuple[Turn, ...]:
        """The conversation up to and including this run: what ``after`` continues."""
        result = self.result
        if result is None or result.final_answer is None:
            return self.spec.history
        turn = Turn(
            task=self.spec.task,
            final_answer=result.final_answer,
            winner=result.winner,
            run_id=self.run_id,
        )
        return (*self.spec.history, turn)

    def summary(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "task": self.spec.task,
            "status": "ended" if self.result is not None else "running",
        }

    def snapshot_frame(
        self, request_id: str | None, capture: Capture, encoding: FrameEncoding
    ) -> bytes:
        """The ``snapshot`` of ``capture`` for a client, as a websocket frame in its
        ``encoding``. Encoded once per capture for every client that joins with it (a
        1,000-agent view is hundreds of kilobytes), and framed (compressed) once per
        encoding for all those that sent no ``request_id``."""
        if self._snapshot is None or self._snapshot[0] is not capture:
            snapshot = Snapshot(
                run_id=self.run_id,
                request_id=None,
                next_seq=capture.next_seq,
                view=capture.view,
                run_started=capture.run_started,
                override_window=capture.override_window,
                ended=capture.ended,
                question=capture.question,
                approval=capture.approval,
            )
            self._snapshot = (capture, encode_snapshot(snapshot), {})
        _, line, frames = self._snapshot
        if request_id is not None:
            return encoded_frame(with_request_id(line, request_id).encode("utf-8"), encoding)
        if encoding not in frames:
            frames[encoding] = encoded_frame(line.encode("utf-8"), encoding)
        return frames[encoding]

    def result_frame(self, encoding: FrameEncoding) -> bytes | None:
        """The run's ``result`` line as a websocket frame in ``encoding`` (for the clients
        subscribing after its end: a 1,000-agent run's is half a megabyte, framed once per
        encoding), or ``None`` before the run has ended."""
        line = self.feed.result_line
        if line is None:
            return None
        if encoding not in self._result_frames:
            self._result_frames[encoding] = encoded_frame(line.encode("utf-8"), encoding)
        return self._result_frames[encoding]

    def cancel(self) -> None:
        """End the run now with its best answer so far; before it has opened, as soon as
        it opens."""
        if self.handle is not None:
            self.handle.cancel()
        else:
            self._cancel_asked = True

    async def decide(self, agent: str | None) -> tuple[bool, str | None]:
        """Override (``agent``) or continue (``None``) the open override window: whether the
        coordinator took it, and if not, why."""
        handle = self.handle
        if self.result is not None:
            return False, "the run has ended"
        if handle is None:
            return False, "the run has not started yet; wait for its override_window line"
        try:
            verdict = await (handle.override(agent) if agent is not None else handle.continue_())
        except ConclaveRuntimeError:
            return False, "the run ended before the decision reached it"
        return verdict.accepted, verdict.error

    def correct(self, message: Correct) -> Verdict:
        """Pass a correction to the run's PAOR agents: the verdict says whether it was
        taken, and if not, why (the run has not started or has ended, no such agent)."""
        handle, error = self.handle, None
        if self.result is not None:
            error = "the run has ended"
        elif handle is None:
            error = "the run has not started yet; wait for its run_started line"
        else:
            try:
                handle.correct(message.text, message.agent)
            except ValueError as exc:
                error = str(exc)
        return Verdict(
            run_id=self.run_id,
            request_id=message.request_id,
            decision=message.type,
            agent=message.agent,
            accepted=error is None,
            error=error,
        )

    def answer(self, message: Answer) -> Verdict:
        """Answer the open question: the verdict names the asking agent, or says why the
        answer was not taken (the run ended, no such question open, answered already)."""
        agent, error = self._answer(message.question_id, message.value)
        return Verdict(
            run_id=self.run_id,
            request_id=message.request_id,
            decision=message.type,
            agent=agent,
            accepted=error is None,
            error=error,
            question_id=message.question_id,
        )

    def _answer(self, question_id: str, value: str) -> tuple[str | None, str | None]:
        if self.result is not None:
            return None, "the run has ended"
        open_now = self._question
        if open_now is None:
            return None, f"no question is open (question {question_id!r} is not waiting)"
        asked, send = open_now
        if asked.question_id != question_id:
            return None, f"question {question_id!r} is not the open one ({asked.question_id!r})"
        try:
            send.send_nowait(Reply(value=value))
        except trio.WouldBlock:
            return None, f"question {question_id!r} was answered already"
        return asked.agent, None

    def approve(self, message: Approve) -> Verdict:
        """Decide the waiting tool call: the verdict names the agent that called it, or
        says why the decision was not taken (the run ended, no such call waits, decided
        already)."""
        agent, error = self._approve(message)
        return Verdict(
            run_id=self.run_id,
            request_id=message.request_id,
            decision=message.type,
            agent=agent,
            accepted=error is None,
            error=error,
            approval_id=message.approval_id,
        )

    def _approve(self, message: Approve) -> tuple[str | None, str | None]:
        wanted = message.approval_id
        if self.result is not None:
            return None, "the run has ended"
        open_now = self._approval
        if open_now is None:
            return None, f"no tool call waits for approval (approval {wanted!r} is not open)"
        approval, send = open_now
        if approval.approval_id != wanted:
            return None, f"approval {wanted!r} is not the open one ({approval.approval_id!r})"
        try:
            send.send_nowait(decision_of(message))
        except trio.WouldBlock:
            return None, f"approval {wanted!r} was decided already"
        return approval.agent, None

    def question_opened(self, asked: PendingQuestion, send: trio.MemorySendChannel[Reply]) -> None:
        """``asked`` waits for an ``answer``, to be sent on ``send`` (its line is an event's,
        already published)."""
        self._question = (asked, send)
        self.feed.question = question_fields(asked)

    def question_closed(self) -> None:
        self._question = None
        self.feed.question = None

    def approval_opened(
        self, approval: Approval, send: trio.MemorySendChannel[ToolDecision]
    ) -> None:
        """``approval`` waits for an ``approve``, to be sent on ``send``: its
        ``approval_requested`` line goes to the watchers."""
        self._approval = (approval, send)
        line = encode_server(ApprovalRequested.of(self.run_id, approval))
        self.feed.approval = {k: v for k, v in _loads(line).items() if k not in {"type", "run_id"}}
        self.feed.note(line)

    def approval_closed(self) -> None:
        self._approval = None
        self.feed.approval = None

    def _opened(self, handle: RunHandle) -> None:
        self.handle = handle
        self.feed.bind(handle.system.record)
        if self._cancel_asked:
            handle.cancel()

    def _window_opened(self, request: OverrideRequest) -> None:
        window = OverrideWindow.of(self.run_id, request)
        line = encode_server(window)
        self.feed.override_window = {k: v for k, v in _loads(line).items() if k != "type"}
        self.feed.note(line)

    def _window_closed(self) -> None:
        self.feed.override_window = None


def _loads(line: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(line)
    return data


class RunRegistry:
    """Starts runs in its own nursery and keeps them by ``run_id``; see the module
    docstring. Cancelling the nursery cancels every run (each concludes ``cancelled``)."""

    def __init__(
        self,
        settings: ServeSettings,
        *,
        backends: BackendPool,
        nursery: trio.Nursery,
        say: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.settings = settings
        self._backends = backends
        self._nursery = nursery
        self._say = say
        self._runs: dict[str, ServedRun] = {}
        self._active = 0
        self._idle = trio.Event()
        self._idle.set()
        self.closing = False

    @property
    def active(self) -> int:
        return self._active

    def runs(self) -> list[ServedRun]:
        return list(self._runs.values())

    def get(self, run_id: str, *, request_id: str | None = None) -> ServedRun:
        run = self._runs.get(run_id)
        if run is None:
            raise ProtocolError(
                ErrorCode.UNKNOWN_RUN,
                f"no run {run_id!r} on this server (it keeps the latest "
                f"{self.settings.keep_finished} finished runs); the welcome frame lists them",
                request_id=request_id,
            )
        return run

    def start(self, request: StartRun) -> ServedRun:
        """Start the run ``request`` asks for, or raise :class:`ProtocolError` saying why
        not. Synchronous: the run exists (and may be watched) when this returns."""
        rid = request.request_id
        if self.closing:
            raise ProtocolError(ErrorCode.SHUTTING_DOWN, "the server is stopping", request_id=rid)
        if self._active >= self.settings.max_runs:
            raise ProtocolError(
                ErrorCode.BUSY,
                f"{plural(self._active, 'run')} {'is' if self._active == 1 else 'are'} running, "
                "the most this server runs at once "
                "(--max-runs); wait for one to end, or cancel one",
                request_id=rid,
            )
        config = self._config(request)
        history: tuple[Turn, ...] = ()
        allowances = SessionAllowances()
        if request.after is not None:
            earlier = self.get(request.after, request_id=rid)
            if earlier.result is None:
                raise ProtocolError(
                    ErrorCode.RUN_NOT_STARTED,
                    f"run {request.after!r} has not ended; continue it once it has",
                    request_id=rid,
                )
            if earlier.result.final_answer is None:
                raise ProtocolError(
                    ErrorCode.RUN_NOT_STARTED,
                    f"run {request.after!r} ended without an answer: nothing to continue",
                    request_id=rid,
                )
            history = earlier.history
            allowances = earlier.spec.tool_allowances or allowances
        log_dir = self._new_log_dir(rid)
        run_id = log_dir.name
        hub = EventHub()
        spec = RunSpec(
            task=request.task,
            config=config,
            mode=request.mode,
            history=history,
            log_dir=log_dir,
            backends=self._backends,
            tool_allowances=allowances,
        )
        stream = StreamJson(
            io.StringIO(), spec=spec, run_id=run_id, include_partial=False, clock=RunClock()
        )
        feed = RunFeed(
            stream,
            flush_interval=self.settings.flush_interval,
            fanout_rate=self.settings.fanout_rate,
            frame_bytes=self.settings.frame_bytes,
        )
        run = ServedRun(run_id=run_id, spec=spec, feed=feed, hub=hub)
        approvals = WatcherApprovals(run, request.decision_timeout)
        run.spec = attrs.evolve(run.spec, tool_approver=approvals)
        if request.override_window:
            run.spec = attrs.evolve(run.spec, human=_ClientGate(run, request.decision_timeout))
        if request.questions:
            questions = WatcherQuestions(run, request.decision_timeout)
            run.spec = attrs.evolve(run.spec, questions=questions)
        self._runs[run_id] = run
        self._active += 1
        self._idle = trio.Event() if self._active == 1 else self._idle
        self._forget_old()
        self._nursery.start_soon(self._drive, run)
        self._nursery.start_soon(feed.flush_until_finished)
        self._say(f"run {run_id} started: {_short(request.task)}")
        return run

    def _config(self, request: StartRun) -> ConclaveConfig:
        rid = request.request_id
        if request.agent is not None and request.agent_mode is not AgentMode.SINGLE:
            raise ProtocolError(
                ErrorCode.BAD_MESSAGE,
                'start_run.agent picks the agent of single mode; add "agent_mode": "single"',
                request_id=rid,
            )
        modes = ModeState(
            agent_mode=request.agent_mode,
            active_agent=request.agent,
            refinement=request.refinement,
        )
        try:
            return self.settings.resolved.for_modes(modes, timeout=request.timeout)
        except UnknownAgent as exc:
            raise ProtocolError(
                ErrorCode.BAD_MESSAGE, f"start_run.agent: {exc}", request_id=rid
            ) from None
        except ConfigError as exc:
            raise ProtocolError(
                ErrorCode.RUN_NOT_STARTED,
                f"the run's config cannot run in these modes: {exc}",
                request_id=rid,
            ) from None

    def _new_log_dir(self, request_id: str | None) -> Path:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = self.settings.log_root / f"{stamp}-{secrets.token_hex(3)}"
        try:
            path.mkdir(parents=True)
        except OSError as exc:
            raise ProtocolError(
                ErrorCode.RUN_NOT_STARTED,
                f"cannot create the run's log directory {path} ({exc.strerror or exc}); "
                "the server's --log-dir must be writable",
                request_id=request_id,
            ) from None
        return path

    def _forget_old(self) -> None:
        ended = [run for run in self._runs.values() if run.result is not None]
        for run in ended[: max(0, len(ended) - self.settings.keep_finished)]:
            del self._runs[run.run_id]

    async def _drive(self, run: ServedRun) -> None:
        """The run's life, in the registry's nursery. Cancelled (the server stops), the run
        concludes ``cancelled`` and its feed still gets its last lines."""
        result: RunResult | None = None
        try:
            with run.hub, run.hub.subscribe_sync(run.feed.record, run.feed.kinds, name="serve"):
                try:
                    result = await drive(run.spec, run.hub, on_open=run._opened)
                except Exception as exc:  # the log could not be created: nothing ran
                    reason = f"the run could not start: {type(exc).__name__}: {exc}"
                    result = not_started(run.spec, Termination.FAILED, reason)
        finally:
            if result is None:  # cancelled: a run that had opened concluded on the way out
                outcome = run.handle.outcome if run.handle is not None else None
                result = outcome or not_started(run.spec, Termination.CANCELLED)
            run.feed.bind(None)
            run.result = result
            run.handle = None  # its actor system: a finished run keeps its feed and result
            run.feed.finish(result)
            run.ended.set()
            self._active -= 1
            if self._active == 0:
                self._idle.set()
            self._say(f"run {run.run_id} ended: {result.termination.value}")

    def cancel_all(self) -> None:
        """Refuse new runs and cancel every running one (each concludes with its best answer
        so far, and its watchers get its last lines)."""
        self.closing = True
        for run in self._runs.values():
            if run.result is None:
                run.cancel()

    async def wait_idle(self) -> None:
        await self._idle.wait()


def _short(task: str, width: int = 60) -> str:
    line = " ".join(task.split())
    return line if len(line) <= width else line[: width - 1] + "…"
