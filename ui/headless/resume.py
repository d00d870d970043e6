"""``conclave resume RUN_DIR --answer VALUE``: a paused run goes on with the user's answer.

A run paused by ``--on-question pause`` left its question (``question.json``) and how it ran
(``paused.json``) in its log directory; its event log and transcripts hold the rest. The
resumed run runs as the paused one did (same task, flags and directory), its asking agent
starting from its rebuilt transcript with the answer appended and its agents' workspaces
copied from the paused run's, and logs into ``RUN_DIR/resumed-N``. A paused run recorded in
a session is resumed in it: the resumed run is recorded as the answer to the paused run's
turn, so the session's history shows the completed run. Nothing is kept in memory between
the pause and the resume: the paused process has exited, and any process may resume it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from conclave.actors.agent.resume import ResumeError, resume_point
from conclave.actors.human.questions import parse_question
from conclave.actors.session.store import session_path
from conclave.actors.tools.arguments import ArgumentError
from conclave.ui.exit_codes import ExitCode
from conclave.ui.headless.command import run_command
from conclave.ui.headless.questions import CONFIG_COPY, PAUSED_FILE, QUESTION_FILE, answers_line
from conclave.ui.headless.result import print_json_error
from conclave.ui.sessions import sessions_root

__all__ = ["resume_command"]


def resume_command(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir).resolve()
    try:
        paused = _paused(run_dir)
        cwd = _working_directory(paused)
        if not args.answer.strip():
            raise ResumeError(_empty_answer(run_dir))
        point = resume_point(run_dir, args.answer)
        flags = _flags(run_dir, paused)
    except ResumeError as exc:
        message = f"conclave resume: {exc}"
        print(message, file=sys.stderr)
        if args.output_format == "json":
            print_json_error(message, ExitCode.USAGE)
        return ExitCode.USAGE
    os.chdir(cwd)  # relative paths in the flags (--config, --context) mean there
    session = _session(paused)
    run = argparse.Namespace(
        **(_ADDED_FLAGS | flags),
        task=paused["task"],
        log_dir=str(_next_log_dir(run_dir)),
        output_format=args.output_format,
        include_partial_messages=False,
        verbose=args.verbose,
        continue_session=False,
        resume=session,
    )
    turn = paused.get("turn") if session is not None else None
    return run_command(run, resume=point, paused_turn=turn if isinstance(turn, int) else None)


_ADDED_FLAGS: dict[str, Any] = {"log_deliveries": False}
"""``conclave run``'s flags added since runs could pause, at their defaults: a run paused by
an earlier version kept no value for them."""


def _flags(run_dir: Path, paused: dict[str, Any]) -> dict[str, Any]:
    """The paused run's flags, its ``--config`` the copy of its config it kept
    (:data:`CONFIG_COPY`), so the resume does not depend on the file. A paused run without
    one (paused before copies were kept, or its file held a secret written out) reads its
    original file, whose absence is refused saying whose it was and where."""
    flags = dict(paused["flags"])
    copy = run_dir / CONFIG_COPY
    if copy.is_file():
        return flags | {"config": str(copy)}
    config = flags.get("config")
    where = Path(paused["cwd"]) / config if isinstance(config, str) else None
    if where is not None and not where.is_file():
        raise ResumeError(
            f"the paused run's config {config} is gone (it was {where}; {run_dir} keeps no "
            f"{CONFIG_COPY}): put the config back there to resume, or run the task again"
        )
    return flags


def _working_directory(paused: dict[str, Any]) -> Path:
    """The directory the paused run ran in, where the resumed one runs (relative ``--config``
    and ``--context`` paths mean there); one removed since is refused, saying which."""
    cwd = Path(paused["cwd"])
    if not cwd.is_dir():
        raise ResumeError(
            f"the paused run's working directory {cwd} is gone: the resumed run runs there "
            "(relative --config and --context paths mean there); recreate it to resume, or "
            "run the task again"
        )
    return cwd


def _session(paused: dict[str, Any]) -> str | None:
    """The session the paused run was recorded in, if it still exists: the resumed run is
    recorded there, answering the paused run's turn. One removed since (pruned, deleted)
    leaves the resumed run a new session, said on stderr."""
    session = paused.get("session")
    if not isinstance(session, str):
        return None
    if not session_path(sessions_root(), session).is_file():
        print(
            f"conclave resume: the paused run's session {session} is gone; the resumed run "
            "is recorded in a new one",
            file=sys.stderr,
        )
        return None
    return session


def _paused(run_dir: Path) -> dict[str, Any]:
    path = run_dir / PAUSED_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError):
        raise ResumeError(
            f"{run_dir} is not a paused run (no {PAUSED_FILE}): give the log directory that "
            "`conclave run --on-question pause` named when it paused"
        ) from None
    except (OSError, ValueError) as exc:
        raise ResumeError(f"{path} cannot be read: {exc}") from None
    if not (isinstance(data, dict) and {"task", "cwd", "flags"} <= data.keys()):
        raise ResumeError(f"{path} is damaged: it lacks the task, cwd or flags")
    return data


def _empty_answer(run_dir: Path) -> str:
    """Why an empty ``--answer`` is refused, with what the question offers when its file can
    be read: an empty answer is no answer (the REPL's card refuses one too)."""
    offered = ""
    try:
        asked = json.loads((run_dir / QUESTION_FILE).read_text(encoding="utf-8"))["question"]
        offered = answers_line(parse_question(json.dumps(asked)))
    except (OSError, ValueError, KeyError, TypeError, ArgumentError):
        pass
    return (
        f"--answer is empty: give the answer to the question in {QUESTION_FILE}"
        + (f" ({offered})" if offered else "")
        + ", or your own words"
    )


def _next_log_dir(run_dir: Path) -> Path:
    """``RUN_DIR/resumed-N``, the first N not taken (a run may pause and resume again)."""
    n = 1
    while (run_dir / f"resumed-{n}").exists():
        n += 1
    return run_dir / f"resumed-{n}"
