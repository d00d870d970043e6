"""``conclave chat``: the interactive agent without a terminal, one message per turn.

Why a command of its own rather than ``conclave run`` with ``interactive_mode`` on: ``run`` is
one run, and its output (text, ``json``, ``stream-json``: docs/stream-json.md) is that run's
result, which scripts read. A chat turn is an agent's reply that may have launched any
number of runs, or none; giving ``run`` that shape whenever a config has the section would
change what existing scripts read. So ``run`` stays one run whatever the config says, and
``chat`` is the interactive agent's headless entry.

Each ``MESSAGE`` is a turn, in order, in one conversation; without any, each non-empty line of
stdin is one. The agent's replies go to stdout (text: each reply, a blank line between
turns; ``json``: one object ``{"turns": [{"message", "reply", "error", "runs"}]}``), the
runs it launches are announced on stderr. With ``interactive_mode.require_approval`` (the
default) nobody can approve a run here: ``--yes`` approves each one; without it each is
refused and the agent is told so. Exit codes: 0 every turn answered, 1 some turn failed (its
error on stderr) or stdout could not take the replies (closed before the command started, or
full: said on stderr), 2 usage or config, 130/143 signals (ui.exit_codes).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import trio

from conclave.actors.events import EventHub
from conclave.actors.human.run_approval import ApproveAll, RefuseAll, RunApprover
from conclave.actors.interactive.approval import interactive_gate
from conclave.actors.interactive.launcher import RunLauncher
from conclave.actors.interactive.outcome import RunRecord
from conclave.actors.interactive.project import find_project
from conclave.actors.interactive.session import (
    InteractiveReply,
    InteractiveSession,
    interactive_agent,
    workspace_note,
)
from conclave.actors.llm.pool import open_backends
from conclave.actors.run.driver import RunSpec, drive
from conclave.actors.run.result import RunResult
from conclave.actors.session.store import SessionError
from conclave.actors.tools.permissions import SessionAllowances
from conclave.config.keys import check_interactive_key
from conclave.config.problems import ConfigError
from conclave.config.resolver import ResolvedConfig, RunFlags, UsageError, resolve
from conclave.config.schema.interactive import InteractiveModeConfig
from conclave.ui.exit_codes import ExitCode
from conclave.ui.headless.chat_session import ChatSession
from conclave.ui.headless.inputs import decode_task
from conclave.ui.headless.result import print_json_error
from conclave.ui.log_dir import resolve_log_root
from conclave.ui.sessions import (
    chosen_session,
    open_chosen_session,
    prune_old_sessions,
    sessions_root,
)
from conclave.ui.signals import STOP_SIGNALS, StopSignals, signal_exit_code
from conclave.ui.streams import cannot_write, write_stdout
from conclave.ui.text import display_path

__all__ = ["chat_command", "interactive_settings"]


def interactive_settings(resolved: ResolvedConfig) -> InteractiveModeConfig:
    """The interactive mode's settings: the config's section, its defaults without one.
    A section with ``enabled: false`` is refused: the config says not to use the agent."""
    section = resolved.base.orchestrator.interactive_mode
    if section is None:
        return InteractiveModeConfig()
    if not section.enabled:
        where = resolved.source or "the config"
        raise UsageError(
            f"{where} sets orchestrator.interactive_mode.enabled: false; set it to true (or "
            "remove it) to chat with the interactive agent, or use `conclave run TASK`"
        )
    return section


def chat_command(args: argparse.Namespace) -> int:
    root = sessions_root()
    try:
        messages = _messages(args.message)
        flags = RunFlags.from_args(args)
        resolved = resolve(flags)
        resolved.for_modes(flags.mode_state())  # the panel could run, as every front end checks
        settings = interactive_settings(resolved)
        check_interactive_key(resolved.base, source=resolved.source)
        chosen = chosen_session(root, args)
        log_root = resolve_log_root(args.log_dir)
    except (UsageError, ConfigError, SessionError) as exc:
        return _usage(args, str(exc))
    prune_old_sessions(root, resolved.base)
    permission_note = resolved.headless_permission_note()
    if permission_note is not None:
        _warn(permission_note)  # the agent's own calls and its runs' are refused alike
    approver: RunApprover = (
        ApproveAll() if args.yes or not settings.require_approval else RefuseAll()
    )
    signals = StopSignals()
    try:
        with open_chosen_session(root, chosen, warn=_warn) as recorder:
            session = ChatSession(recorder, warn=_warn)
            with signals.installed():
                replies = trio.run(
                    _chat, resolved, settings, approver, log_root, messages, signals, session
                )
    except SessionError as exc:
        return _usage(args, str(exc))
    if args.output_format == "json":
        turns = [_turn_json(m, r) for m, r in zip(messages, replies, strict=False)]
        why = write_stdout(json.dumps({"session_id": session.id, "turns": turns}))
    else:
        why = write_stdout("\n\n".join(r.text or "" for r in replies if r.text is not None))
    if session.id is not None:
        _warn(f"session {session.id} (go on with: conclave chat --resume {session.id} MESSAGE)")
    failed = [r for r in replies if r.text is None]
    for reply in failed:
        print(f"conclave chat: the turn failed: {reply.error}", file=sys.stderr)
    if why is not None:
        then = f"the conversation is in session {session.id}" if session.id is not None else None
        cannot_write("conclave chat", "the replies", why, then=then)
    if signals.received:
        print(
            f"conclave chat: stopped after {len(replies)} of {len(messages)} turns "
            "(a run in progress ended cancelled)",
            file=sys.stderr,
        )
        return signal_exit_code(signals.received[0])
    return ExitCode.FAILED if failed or why is not None else ExitCode.OK


def _usage(args: argparse.Namespace, problem: str) -> int:
    """A usage error: on stderr, and as the error object on stdout with ``json`` output (a
    script reading stdout gets one JSON object, as from ``conclave run``)."""
    line = f"conclave chat: {problem}"
    print(line, file=sys.stderr)
    if args.output_format == "json":
        print_json_error(line, ExitCode.USAGE)
    return ExitCode.USAGE


def _messages(given: list[str]) -> list[str]:
    if given:
        messages = [m.strip() for m in given]
    elif sys.stdin is not None and not sys.stdin.isatty():
        raw = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
        text = decode_task(raw if isinstance(raw, bytes) else raw.encode())
        messages = [line.strip() for line in text.splitlines()]
    else:
        messages = []
    messages = [m for m in messages if m]
    if not messages:
        raise UsageError("no message given: pass MESSAGE (one per turn), or pipe lines on stdin")
    return messages


async def _chat(
    resolved: ResolvedConfig,
    settings: InteractiveModeConfig,
    approver: RunApprover,
    log_root: Path,
    messages: list[str],
    stop: StopSignals,
    recorded: ChatSession,
) -> list[InteractiveReply]:
    """The replies to ``messages`` in order; a stop signal (or one received before this
    listened) ends the turn in progress, its run ending ``cancelled``, and those after it."""
    project = find_project(Path.cwd())
    if project is not None:
        print(f"conclave: in project {display_path(project.root)}", file=sys.stderr)
    async with open_backends() as pool:
        with EventHub() as hub:
            launcher = RunLauncher(
                resolved=resolved,
                driver=_AnnouncingDriver(hub, recorded),
                approver=approver,
                log_root=log_root,
                project=project,
                backends=pool,
                on_run=_ran,
            )
            agent = interactive_agent(resolved.base, settings)
            root = project.root if project else Path.cwd()
            session = InteractiveSession(
                config=resolved.base,
                settings=settings,
                backend=await pool.backend(agent),
                launcher=launcher,
                workspace=workspace_note(resolved.base, root),
                history=recorded.history(),
                # Nobody to ask: a call of the agent's that must ask is refused, saying why.
                before_call=interactive_gate(
                    resolved.base.permissions,
                    None,
                    session=SessionAllowances(),
                    workspace=root,
                    run_approval=settings.require_approval,
                ),
            )
            replies: list[InteractiveReply] = []
            with trio.open_signal_receiver(*STOP_SIGNALS) as signals:
                async with trio.open_nursery() as nursery:

                    async def stop_at_a_signal() -> None:
                        if not stop.received:  # one before this listened is recorded there
                            async for signum in signals:
                                stop.received.append(signum)
                                break
                        nursery.cancel_scope.cancel()

                    nursery.start_soon(stop_at_a_signal)
                    for message in messages:
                        recorded.turn_started(message)
                        reply = await session.turn(message)
                        if reply.text is not None:
                            recorded.replied(reply.text, input_tokens=reply.input_tokens)
                        replies.append(reply)
                    nursery.cancel_scope.cancel()
            return replies


class _AnnouncingDriver:
    """Runs each launched run, saying on stderr where its log goes."""

    def __init__(self, hub: EventHub, recorded: ChatSession) -> None:
        self.hub = hub
        self.recorded = recorded

    async def __call__(self, spec: RunSpec, *, status: str) -> RunResult:
        where = display_path(spec.log_dir / "events.jsonl") if spec.log_dir else "no log"
        agents = ", ".join(a.id for a in spec.config.agents)
        print(f"conclave: {status} ({agents}); logging to {where}", file=sys.stderr, flush=True)
        result = await drive(spec, self.hub)
        self.recorded.run_ended(result)
        return result


def _warn(message: str) -> None:
    print(f"conclave: {message}", file=sys.stderr)


def _ran(record: RunRecord) -> None:
    print(f"conclave: run {record.run_id} ended {record.termination}", file=sys.stderr)


def _turn_json(message: str, reply: InteractiveReply) -> dict[str, Any]:
    return {
        "message": message,
        "reply": reply.text,
        "error": reply.error or None,
        "runs": [outcome.to_json() for outcome in reply.outcomes],
    }
