"""The response cache's line in the batch's summary: where it is, how its key is made, and
how many of this session's calls it answered."""

from __future__ import annotations

from typing import Any

import attrs

from conclave.actors.llm.cache import KEY_VERSION, CacheStatistics

__all__ = ["KEY_DESCRIPTION", "CacheSummary", "count_cache"]

KEY_DESCRIPTION = (
    f"sha256 of key version {KEY_VERSION}, the epoch, the agent's id, its backend config "
    "(API keys left out) and the request"
)


@attrs.frozen(kw_only=True)
class CacheSummary:
    path: str
    hits: int
    misses: int

    @property
    def hit_rate(self) -> float | None:
        calls = self.hits + self.misses
        return self.hits / calls if calls else None

    def line(self) -> str:
        rate = "-" if self.hit_rate is None else f"{self.hit_rate:.1%}"
        return (
            f"response cache {self.path}: {self.hits:,} of {self.hits + self.misses:,} calls "
            f"answered from it (hit rate {rate}); key: {KEY_DESCRIPTION}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "hits": self.hits,
            "misses": self.misses,
            "hit_rate": self.hit_rate,
            "key": KEY_DESCRIPTION,
        }


def count_cache(
    counts: dict[tuple[str, int], CacheStatistics],
    process: tuple[str, int],
    figures: CacheStatistics,
) -> None:
    """Keep ``process``'s (host, pid) cache figures: the most calls seen. A process's
    outcomes carry its running totals, and the replies of a Ray worker running several
    runs at once may arrive out of order."""
    kept = counts.get(process)
    if kept is None or figures.hits + figures.misses > kept.hits + kept.misses:
        counts[process] = figures
