"""Who sees whose answers. The bus asks the topology for recipients; the coordinator asks it
what to show in a snapshot. ``all`` is MassGen's all-to-all; ``ring`` and ``islands:K`` keep
the fan-out per answer constant so runs scale past a handful of agents."""

from __future__ import annotations

from collections.abc import Sequence

from config.schema import parse_visibility

__all__ = ["Visibility"]


class Visibility:
    """A symmetric topology over agents in config order."""

    def __init__(self, spec: str, agents: Sequence[str]) -> None:
        self.kind, self.k = parse_visibility(spec)
        self._agents = list(agents)
        self._index = {agent: i for i, agent in enumerate(self._agents)}

    def peers(self, agent: str) -> list[str]:
        """Agents whose answers ``agent`` sees (itself excluded); also who sees ``agent``."""
        n = len(self._agents)
        i = self._index[agent]
        if self.kind == "all" or (n <= 3 and self.kind == "ring"):
            return [a for a in self._agents if a != agent]
        if self.kind == "ring":
            return [self._agents[(i - 1) % n], self._agents[(i + 1) % n]]
        start = i - i % self.k
        return [a for a in self._agents[start : start + self.k] if a != agent]
