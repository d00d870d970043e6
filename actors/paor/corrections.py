"""Corrections from the user to a run's PAOR agents ("search only in src/utils").

A :class:`Corrections` box is owned by the run: the run's handle puts a correction in
(:meth:`~actors.run.handle.RunHandle.correct`) and each PAOR round takes its own out at its
next step boundary, where the transcript is whole. A correction for nobody in particular goes
to every agent. Plain synchronous methods: nothing here waits, so nothing here is cancelled.
"""

from __future__ import annotations

from collections import defaultdict

__all__ = ["Corrections"]


class Corrections:
    def __init__(self, agents: tuple[str, ...]) -> None:
        self._agents = agents
        self._pending: defaultdict[str, list[str]] = defaultdict(list)

    def put(self, text: str, agent: str | None = None) -> None:
        """Queue ``text`` for ``agent`` (``None``: every agent). Raises ``ValueError`` for
        an agent the run does not have, or an empty correction."""
        if not text.strip():
            raise ValueError("a correction needs some text: say what the agent should change")
        if agent is not None and agent not in self._agents:
            known = ", ".join(self._agents)
            raise ValueError(f"no agent {agent!r} in this run; its agents are: {known}")
        for target in (agent,) if agent is not None else self._agents:
            self._pending[target].append(text)

    def take(self, agent: str) -> list[str]:
        """The corrections queued for ``agent`` since it last took them."""
        return self._pending.pop(agent, [])
