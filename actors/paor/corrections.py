"""Corrections from the user to a run's PAOR agents ("search only in src/utils").

A :class:`Corrections` box is owned by the run: the run's handle puts a correction in
(:meth:`~actors.run.handle.RunHandle.correct`) and each PAOR round takes its own out at its
next step boundary, where the transcript is whole. A correction for nobody in particular goes
to every PAOR agent. One that no round took stays for the agent's next PAOR round; when the
run ends, the box is closed and says what was never taken (the run records each as
``correction_unused``, so the user learns it came too late rather than nothing). Once the
run's answer rounds are over (its vote decided, its answer being presented) no PAOR round
is left to take one, and the run's handle refuses it at once (:class:`NoRoundLeft`). Plain
synchronous methods: nothing here waits, so nothing here is cancelled.
"""

from __future__ import annotations

from collections import defaultdict

import attrs

__all__ = ["Corrections", "NoRoundLeft", "UnusedCorrection"]


class NoRoundLeft(ValueError):
    """A correction that no PAOR round could take: the run's answer rounds are over (its
    vote is decided, its answer is being presented), so it would only end ``unused``."""

    def __init__(self) -> None:
        super().__init__(
            "no PAOR round is left in this run (its answer rounds are over: voting or the "
            "presentation): the correction would change nothing, so it was not sent"
        )


@attrs.frozen(kw_only=True)
class UnusedCorrection:
    """A correction no PAOR round of ``agent`` took before the run ended."""

    agent: str
    text: str


class Corrections:
    def __init__(self, agents: tuple[str, ...], *, paor: tuple[str, ...]) -> None:
        """``agents``: the run's; ``paor``: those whose answer rounds run PAOR."""
        self._agents = agents
        self._paor = paor
        self._pending: defaultdict[str, list[str]] = defaultdict(list)
        self._unused: tuple[UnusedCorrection, ...] | None = None

    def put(self, text: str, agent: str | None = None) -> None:
        """Queue ``text`` for ``agent`` (``None``: every PAOR agent). Raises ``ValueError``
        for an empty correction, an agent the run does not have or that does not run PAOR,
        a run without PAOR agents, or a run that has ended."""
        if self._unused is not None:
            raise ValueError("the run has ended: the correction came too late and was not used")
        if not text.strip():
            raise ValueError("a correction needs some text: say what the agent should change")
        if agent is not None and agent not in self._agents:
            known = ", ".join(self._agents)
            raise ValueError(f"no agent {agent!r} in this run; its agents are: {known}")
        if agent is not None and agent not in self._paor:
            raise ValueError(
                f"agent {agent!r} does not run PAOR (loop: free): only PAOR agents take corrections"
            )
        if not self._paor:
            raise ValueError(
                "no agent of this run runs PAOR (loop: paor): only PAOR agents take corrections"
            )
        for target in (agent,) if agent is not None else self._paor:
            self._pending[target].append(text)

    @property
    def paor(self) -> tuple[str, ...]:
        """The agents whose answer rounds run PAOR: a correction for nobody goes to each."""
        return self._paor

    def take(self, agent: str) -> list[str]:
        """The corrections queued for ``agent`` since it last took them."""
        return self._pending.pop(agent, [])

    def close(self) -> tuple[UnusedCorrection, ...]:
        """The run ended: what no round took, in the order given per agent. Later
        corrections are refused as too late."""
        if self._unused is None:
            self._unused = tuple(
                UnusedCorrection(agent=agent, text=text)
                for agent, texts in self._pending.items()
                for text in texts
            )
            self._pending.clear()
        return self._unused

    @property
    def unused(self) -> tuple[UnusedCorrection, ...]:
        """What :meth:`close` returned (nothing while the run goes)."""
        return self._unused or ()
