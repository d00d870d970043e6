"""The REPL on scripted agents that answer plan mode with JSON plans, as a planning model
does (``python -m tests.repl_e2e.planning_repl``): plan mode end to end in a real terminal.

The scripted backend answers in prose; :func:`tests.repl.backends.planners` turns its
replies into plans when the prompt is in plan mode. Everything else is the REPL as
``conclave`` runs it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from config.schema import default_config
from tests.repl.backends import planners
from ui.repl.app import Repl, run_session
from ui.repl.state import ReplState


def main() -> None:
    config = default_config(3)
    repl = Repl(ReplState(agents=tuple(agent.id for agent in config.agents)))
    log_root = Path(".conclave") / "runs"
    asyncio.run(run_session(repl, config=config, log_root=log_root, backend_factory=planners))


if __name__ == "__main__":
    main()
