"""``conclave run``: one headless run with signal handling.

The answer goes to stdout, progress to stderr; ``json`` prints one object (the result, or an
error object when there is none), ``stream-json`` one event per line ending with a
``result`` event. The log's path is printed on stderr before the run starts, so a run that
is killed can still be found and replayed.

Signals: the first SIGINT (Ctrl+C) or SIGHUP ends the run with the best answer so far and
exit code 130, SIGTERM the same with 143; the event log records ``run_ended: cancelled``.
A second signal during the shutdown that follows cancels everything at once. A signal
before the run has started exits as quietly, with the same codes. Exit codes: ui.exit_codes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import trio

from conclave.actors.agent.resume import ResumePoint
from conclave.actors.coordination.restore import RestoreError, restored_state
from conclave.actors.events import EventHub
from conclave.actors.human.unanswered import OnQuestion
from conclave.actors.run.driver import RunHandle, RunSpec, drive
from conclave.actors.run.lineage import run_id as lineage_run_id
from conclave.actors.run.result import RunResult, Termination
from conclave.actors.run.turn import Turn
from conclave.actors.session.entries import UserTurn
from conclave.actors.session.recorder import LastCallTokens, SessionRecorder
from conclave.actors.session.store import SessionError
from conclave.config.discovery import ConfigOrigin
from conclave.config.modes import CollaborationMode, ModeSource, ModeState
from conclave.config.problems import ConfigError
from conclave.config.resolver import ResolvedConfig, RunFlags, UsageError, resolve
from conclave.config.schema import ConclaveConfig
from conclave.runtime.eventlog import EventLogExists, EventLogFailure
from conclave.ui.exit_codes import ExitCode
from conclave.ui.headless.inputs import EmptyStdin, resolve_task
from conclave.ui.headless.questions import (
    SessionTurn,
    config_snapshot,
    keep_question,
    on_question_gate,
)
from conclave.ui.log_dir import resolve_log_dir
from conclave.ui.progress import RunClock, RunProgress, Silent, StreamJson, TextProgress, run_id_of
from conclave.ui.sessions import (
    chosen_session,
    open_chosen_session,
    prune_old_sessions,
    restored_modes,
    restored_notice,
    resumed_conversation,
    sessions_root,
)
from conclave.ui.signals import STOP_SIGNALS, StopSignals, signal_exit_code
from conclave.ui.streams import cannot_write, discard_stdout, stdout_is_closed
from conclave.ui.text import display_path

if TYPE_CHECKING:
    from conclave.actors.planning.plan import Plan
    from conclave.ui.headless.plan_output import PlannedResult

# Printing the result, a plan-mode run's plan and the live status block are imported where
# they are used: a run with ``--output-format json`` needs none of them before its first
# request, and loading them there cost start-up (issue 24: ~600 modules before it).

__all__ = ["make_progress", "run_command"]

_EXIT = {
    Termination.COMPLETED: ExitCode.OK,
    Termination.FAILED: ExitCode.FAILED,
    Termination.TIMEOUT: ExitCode.TIMEOUT,
    Termination.MAX_COST: ExitCode.TIMEOUT,  # a limit reached, as a timeout is
    Termination.CANCELLED: ExitCode.CANCELLED,
    Termination.PAUSED: ExitCode.PAUSED,
    Termination.MAX_ITERATIONS: ExitCode.MAX_ITERATIONS,
}


def run_command(
    args: argparse.Namespace,
    *,
    resume: ResumePoint | None = None,
    paused_turn: int | None = None,
) -> int:
    """``conclave run``; with ``resume``, a paused run going on (``conclave resume``), which
    answers the session's turn ``paused_turn`` (the paused run's) rather than a new one."""
    fmt: str = args.output_format
    flags = RunFlags.from_args(args)
    root = sessions_root()
    try:
        _refuse_partial_without_stream(args)
        # The session first: ``-c`` where there is none is the usage error, whatever stdin
        # held (an empty stdin there would otherwise hide it behind exit 1).
        chosen = chosen_session(root, args)
        task = resolve_task(args)
        resolved = resolve(flags)
        resumed = resumed_conversation(root, chosen)
        agents = [agent.id for agent in resolved.base.agents]
        restored = None if resumed is None else restored_modes(resumed, agents, warn=_warn)
        if restored is None:
            flags = flags.with_config_mode(resolved.base)
            modes = flags.mode_state()
        else:
            modes = flags.over(restored)  # the session's modes, but for the flags given
        config = resolved.for_flags(modes)
        pauses = getattr(args, "on_question", None) == OnQuestion.PAUSE.value
        config_text = config_snapshot(resolved.found.path, config) if pauses else None
        log_dir = resolve_log_dir(args.log_dir)
        if resume is not None:
            _replays(resume, task, config)
    except EmptyStdin as exc:
        return _fail(str(exc), ExitCode.FAILED, fmt)
    except (UsageError, ConfigError, SessionError) as exc:
        return _fail(f"conclave: {exc}", ExitCode.USAGE, fmt)
    except RestoreError as exc:
        message = f"conclave resume: the paused run does not go on under its config now: {exc}"
        return _fail(
            f"{message}; restore the config it paused with, or run the task again",
            ExitCode.USAGE,
            fmt,
        )
    _say_where(resolved, config, fmt)
    prune_old_sessions(root, resolved.base)
    try:
        with open_chosen_session(root, chosen, warn=_warn) as session:
            return _run_turn(
                task,
                config,
                modes,
                restored,
                flags,
                log_dir,
                session,
                args,
                resume,
                paused_turn,
                config_text,
            )
    except SessionError as exc:
        return _fail(f"conclave: {exc}", ExitCode.USAGE, fmt)


def _refuse_partial_without_stream(args: argparse.Namespace) -> None:
    """``--include-partial-messages`` adds deltas to the stream-json output and does nothing
    to the others: refused there, as any flag that would be silently ignored is."""
    if args.include_partial_messages and args.output_format != "stream-json":
        raise UsageError(
            "--include-partial-messages applies only to --output-format stream-json; "
            "add that, or drop the flag"
        )


def _run_turn(
    task: str,
    config: ConclaveConfig,
    modes: ModeState,
    restored: ModeState | None,
    flags: RunFlags,
    log_dir: Path,
    session: SessionRecorder | None,
    args: argparse.Namespace,
    resume: ResumePoint | None,
    paused_turn: int | None,
    config_text: str | None,
) -> int:
    """Run ``task`` as the session's next turn (its history shown to the agents, in the
    modes it left off in, ``restored``, but for the flags given); the turn is recorded
    before the run starts, the run once it ends. ``config_text``: the config file's text,
    kept by a pause."""
    fmt: str = args.output_format
    turn = None
    if session is not None:
        if restored is not None:
            if fmt == "text":
                _warn(restored_notice(session.id, session.conversation, modes))
            session.mode(modes, ModeSource.FLAG)  # written only when a flag changed it
        else:
            given = flags.collaboration_given or config.mode is None
            session.mode(modes, ModeSource.FLAG if given else ModeSource.CONFIG)
        turn = _paused_turn(session, paused_turn) or session.user_turn(task)
    spec = RunSpec(
        task=task,
        config=config,
        log_dir=log_dir,
        log_deliveries=args.log_deliveries,
        max_cost_usd=args.max_cost,
        questions=on_question_gate(args.on_question),
        resume=resume,
        mode=modes.collaboration,
        history=_history(session, turn),
    )
    tokens = LastCallTokens()
    signals = StopSignals()
    with signals.installed():
        print(f"conclave: logging to {display_path(log_dir / 'events.jsonl')}", file=sys.stderr)
        try:
            ran = trio.run(_run, spec, args, signals, tokens)
        except EventLogExists as exc:
            # Another run took the directory between our check and the log's creation.
            return _fail(f"conclave: --log-dir: {exc}", ExitCode.USAGE, fmt)
        if ran is None:
            # Stopped before the run had started: nothing to print but the exit code.
            code = signal_exit_code(signals.received[0])
            if fmt == "json":
                from conclave.ui.headless.result import print_json_error

                print_json_error("cancelled before the run started", code)
            return code
        result, progress = ran
        # Imported once the run is over, so its start-up does not load it.
        from conclave.actors.interactive.project import keep_in_project

        keep_in_project(Path.cwd(), spec.log_dir, result.workspace_path)
        recorded = (
            session is not None and turn is not None and _record(session, turn, result, tokens)
        )
        code = _EXIT[result.termination]
        if result.termination is Termination.CANCELLED and signals.received:
            code = signal_exit_code(signals.received[0])
        planned = None
        if spec.mode is CollaborationMode.PLAN:
            from conclave.ui.headless.plan_output import plan_of

            planned = plan_of(result)
        if session is not None and planned is not None and planned.plan is not None:
            _record_plan(session, planned.plan, result)
        if result.termination is Termination.PAUSED:
            where = (
                None
                if session is None or turn is None
                else SessionTurn(session=session.id, turn=turn.id)
            )
            keep_question(result, task, args, where, config_text)
        exit_code = _print(result, progress, fmt, code, planned)
        if session is not None and recorded:
            # Last, after the answer: a reader finds the answer right below the timeline.
            _warn(_session_line(session.id, paused=result.termination is Termination.PAUSED))
        return exit_code


def _session_line(session_id: str, *, paused: bool) -> str:
    """Where the run was recorded and how to go on: a paused turn goes on with
    ``conclave resume`` (a new turn would leave it unanswered)."""
    if paused:
        return f"session {session_id} (its paused turn goes on with the conclave resume above)"
    return f"session {session_id} (go on with: conclave run --resume {session_id} TASK)"


def _paused_turn(session: SessionRecorder, turn_id: int | None) -> UserTurn | None:
    """The session's turn a paused run answered, which its resumed run answers instead;
    ``None`` if there is none (the session has no such turn: a new one is recorded)."""
    exchanges = session.conversation.exchanges
    return next((e.user for e in exchanges if turn_id is not None and e.user.id == turn_id), None)


def _history(session: SessionRecorder | None, turn: UserTurn | None) -> tuple[Turn, ...]:
    """The turns before ``turn`` the agents are shown: a resumed run's are those its paused
    run was shown, whatever the session recorded since."""
    if session is None or turn is None:
        return ()
    conversation = session.conversation
    earlier = tuple(e for e in conversation.exchanges if e.user.id < turn.id)
    return attrs.evolve(conversation, exchanges=earlier).history()


def _replays(resume: ResumePoint, task: str, config: ConclaveConfig) -> None:
    """Raise :class:`RestoreError` before the run starts if the paused run's coordination
    does not replay under ``config`` (it was edited since the pause)."""
    restored_state(
        task=task,
        agents=[a.id for a in config.agents],
        orchestrator=config.orchestrator,
        asking=resume.agent,
        history=resume.history,
    )


def _record_plan(session: SessionRecorder, plan: Plan, result: RunResult) -> None:
    """A plan-mode turn's plan: the session's next plan version (decided by the next turn,
    headless)."""
    from conclave.actors.planning.plan import plan_json

    run_id = lineage_run_id(Path(result.log_dir)) if result.log_dir is not None else ""
    try:
        session.plan(version=session.plan_versions + 1, plan=plan_json(plan), run_id=run_id)
    except SessionError as exc:
        _warn(str(exc))


def _record(
    session: SessionRecorder, turn: UserTurn, result: RunResult, tokens: LastCallTokens
) -> bool:
    """The run in the session; ``False`` (said on stderr) when it could not be written."""
    try:
        session.run_ended(turn, result, input_tokens=tokens.input_tokens)
    except SessionError as exc:
        _warn(str(exc))
        return False
    return True


def _warn(message: str) -> None:
    print(f"conclave: {message}", file=sys.stderr)


def _say_where(resolved: ResolvedConfig, config: ConclaveConfig, fmt: str) -> None:
    """One line on stderr for a config the command line did not name: the scripted default
    (always), or the file found (text mode only: json and stream-json keep stderr for
    progress and errors). Then what ``--max-cost`` does not count, or counts at an
    estimate, and that nobody will approve a call that asks."""
    note = resolved.source_note(len(config.agents))
    if note is not None and (fmt == "text" or resolved.found.origin is ConfigOrigin.DEFAULT):
        print(f"conclave: {note}", file=sys.stderr)
    for extra in (resolved.max_cost_note(), resolved.headless_permission_note()):
        if extra is not None:
            print(f"conclave: {extra}", file=sys.stderr)


def make_progress(
    spec: RunSpec, output_format: str, *, verbose: bool, include_partial: bool
) -> RunProgress:
    """The renderer for ``--output-format``; call it in the run's trio context, just before
    the run opens (its clock starts now). Text progress to a terminal is a live block of
    agent statuses (:mod:`ui.headless.live_status`); to anything else, timeline lines."""
    clock = RunClock()
    if output_format == "stream-json":
        return StreamJson(
            sys.stdout,
            spec=spec,
            run_id=run_id_of(spec),
            include_partial=include_partial,
            clock=clock,
        )
    if output_format == "json" and not verbose:
        return Silent()
    if output_format == "text":
        from conclave.ui.headless.live_status import LiveStatus, wants_live_status

        if wants_live_status(sys.stderr):
            return LiveStatus(sys.stderr, verbose=verbose, clock=clock)
    return TextProgress(sys.stderr, verbose=verbose, clock=clock)


def _print(
    result: RunResult,
    progress: RunProgress,
    fmt: str,
    code: int,
    planned: PlannedResult | None = None,
) -> int:
    """Print the result; a stdout that fails, or was closed before the command started
    (``>&-``), is reported in one line and exits 1, a reader that left (``| head``) ends
    quietly with the run's own exit code."""
    from conclave.ui.headless.result import print_result

    if stdout_is_closed():
        return _cannot_print(result, "it is closed")
    try:
        if fmt == "stream-json":
            extra = planned.fields() if planned is not None else {}
            progress.finish(result, extra=extra)  # the stream's last line, ``result``
        else:
            print_result(result, fmt, planned=planned)
    except BrokenPipeError:
        discard_stdout()
        return code
    except OSError as exc:
        discard_stdout()
        return _cannot_print(result, str(exc.strerror or exc))
    return code


def _cannot_print(result: RunResult, why: str) -> int:
    where = display_path(result.log_dir or "-")
    then = f"the run ended {result.termination} and its log is in {where}"
    return cannot_write("conclave", "the result", why, then=then)


def _fail(message: str, code: ExitCode, fmt: str) -> int:
    print(message, file=sys.stderr)
    if fmt == "json":
        from conclave.ui.headless.result import print_json_error

        print_json_error(message, code)
    return code


def _report_log_failure(failure: EventLogFailure) -> None:
    """Say once on stderr that the event log stopped (a full disk): the run goes on without
    it and still prints its result."""
    print(f"conclave: {failure}", file=sys.stderr, flush=True)


async def _run(
    spec: RunSpec, args: argparse.Namespace, signals: StopSignals, tokens: LastCallTokens
) -> tuple[RunResult, RunProgress] | None:
    """Run once, or return ``None`` if stopped before the run had started. The first stop
    signal ends the run with what it has; another during the shutdown that follows cancels
    everything at once."""
    handle: RunHandle | None = None
    hard_stop = trio.CancelScope()

    def opened(run: RunHandle) -> None:
        nonlocal handle
        handle = run

    def stop() -> None:
        if handle is not None and handle.outcome is None and len(signals.received) == 1:
            handle.cancel()
        else:
            hard_stop.cancel()

    with trio.open_signal_receiver(*STOP_SIGNALS) as receiver, EventHub() as hub:
        progress = make_progress(
            spec,
            args.output_format,
            verbose=args.verbose,
            include_partial=args.include_partial_messages,
        )
        hub.subscribe_sync(progress.record, progress.kinds, name="progress")
        hub.subscribe_sync(tokens.record, tokens.kinds, name="session")
        async with trio.open_nursery() as nursery:

            async def on_signals() -> None:
                if signals.received:  # before we listened: during trio's start-up
                    stop()
                async for signum in receiver:
                    signals.received.append(signum)
                    stop()

            nursery.start_soon(on_signals)
            nursery.start_soon(progress.animate)
            with hard_stop:
                await drive(spec, hub, on_open=opened, on_log_failure=_report_log_failure)
            nursery.cancel_scope.cancel()
    # A hard stop cancelled the driver, but a run that was open has concluded all the same.
    result = handle.outcome if handle is not None else None
    return None if result is None else (result, progress)
