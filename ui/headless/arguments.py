"""``conclave run``'s flags: the shared run flags (:func:`config.flags.add_run_flags`) and
its own, about its output. Only argparse here: registering the command must stay cheap so
that ``conclave --help`` starts fast; :mod:`config.resolver` resolves the shared ones."""

from __future__ import annotations

import argparse

from conclave.config.flags import add_run_flags, dollars
from conclave.ui.session_flags import add_session_flags

__all__ = ["add_resume_arguments", "add_run_arguments"]


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", nargs="?", help="the task; read from stdin when omitted and piped")
    add_run_flags(p)
    p.add_argument("--output-format", choices=("text", "json", "stream-json"), default="text")
    p.add_argument(
        "--include-partial-messages",
        action="store_true",
        help="also stream partial (ephemeral) events such as text deltas; only with "
        "--output-format stream-json (refused with the others)",
    )
    p.add_argument(
        "--log-dir", metavar="DIR", help="where events.jsonl goes (default: .conclave/runs/<id>)"
    )
    p.add_argument(
        "--log-deliveries",
        action="store_true",
        help="write every message delivered between the run's actors to events.jsonl too "
        "(for debugging; most of the log's size and cost in a big run)",
    )
    p.add_argument(
        "--max-cost",
        type=dollars,
        metavar="USD",
        help="halt the run like a timeout once its calls cost this much (from the backends' "
        "price: in the config)",
    )
    p.add_argument(
        "--verbose", action="store_true", help="show every agent status change on stderr"
    )
    p.add_argument(
        "--on-question",
        choices=("default", "fail", "pause"),
        help="let agents ask questions, and with nobody to answer: take the question's "
        "default (recorded as an assumption), fail (exit 1), or pause (exit 4; go on with "
        "conclave resume RUN_DIR --answer VALUE). Without it, agents cannot ask",
    )
    add_session_flags(p, picker=False)


def add_resume_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="the paused run's log directory")
    p.add_argument(
        "--answer", required=True, metavar="VALUE", help="the answer to the run's question"
    )
    p.add_argument("--output-format", choices=("text", "json", "stream-json"), default="text")
    p.add_argument(
        "--verbose", action="store_true", help="show every agent status change on stderr"
    )


def add_chat_arguments(p: argparse.ArgumentParser) -> None:
    """``conclave chat``: the interactive agent headless (:mod:`ui.headless.chat`)."""
    p.add_argument(
        "message", nargs="*", help="one turn each, in order; read one per line from stdin if none"
    )
    add_run_flags(p, modes=False)
    p.add_argument(
        "--yes", action="store_true", help="approve every run the agent launches (headless)"
    )
    p.add_argument("--output-format", choices=("text", "json"), default="text")
    p.add_argument(
        "--log-dir", metavar="DIR", help="where each launched run's directory goes (.conclave/runs)"
    )
    add_session_flags(p, picker=False)
