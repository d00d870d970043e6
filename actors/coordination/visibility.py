"""Who sees whose answers. The bus asks the topology for recipients; the coordinator asks it
what to show in a snapshot, whose votes a new answer resets, and which votes are allowed.
``all`` is MassGen's all-to-all; ``ring`` and ``islands:K`` keep the fan-out per answer
constant so runs scale past a handful of agents. With injection disabled every agent works
alone (``isolated``): it sees its own answers only, whatever the topology."""

from __future__ import annotations

from collections.abc import Sequence

from conclave.config.schema import parse_visibility

__all__ = ["Visibility"]


class Visibility:
    """A symmetric topology over agents in config order."""

    def __init__(self, spec: str, agents: Sequence[str], *, isolated: bool = False) -> None:
        self.kind, self.k = parse_visibility(spec)
        self.isolated = isolated
        self._agents = list(agents)
        self._index = {agent: i for i, agent in enumerate(self._agents)}
        self.everyone = not isolated and (
            self.kind == "all" or (self.kind == "ring" and len(self._agents) <= 3)
        )
        """Every agent sees every answer (all-to-all, not isolated). Kept, not computed on
        each use: a run asks it some 9 times per agent."""

    def peers(self, agent: str) -> list[str]:
        """Agents whose answers ``agent`` sees (itself excluded); also who sees ``agent``."""
        if self.isolated:
            return []
        n = len(self._agents)
        i = self._index[agent]
        if self.everyone:
            return [a for a in self._agents if a != agent]
        if self.kind == "ring":
            return [self._agents[(i - 1) % n], self._agents[(i + 1) % n]]
        start = i - i % self.k
        return [a for a in self._agents[start : start + self.k] if a != agent]

    def audience(self, author: str) -> list[str]:
        """Who is shown ``author``'s answers, ``author`` included, in config order."""
        shown = (author, *self.peers(author))
        return sorted(shown, key=self._index.__getitem__)

    def sees(self, viewer: str, author: str) -> bool:
        """Whether ``viewer`` is shown ``author``'s answers (everyone sees their own)."""
        if viewer == author:
            return True
        if self.isolated:
            return False
        if self.everyone:
            return True
        i, j = self._index[viewer], self._index[author]
        if self.kind == "ring":
            return (i - j) % len(self._agents) in (1, len(self._agents) - 1)
        return i // self.k == j // self.k
