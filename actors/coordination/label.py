"""Anonymous ids and answer labels: what the models call agents and answers.

Models never see config ids. Agent number N (1-based, in sorted config-id order) is
``agentN``, and its M-th answer is labelled ``agentN.M``. Messages carry labels as plain
strings (the wire format and old logs stay as they are); :class:`Label` is the one place that
formats and parses them.
"""

from __future__ import annotations

import functools
import re

import attrs

__all__ = ["Label", "anonymous_id"]

_PREFIX = "agent"
_LABEL = re.compile(rf"{_PREFIX}([1-9][0-9]*)\.([1-9][0-9]*)")


@functools.lru_cache(maxsize=1 << 16)
def anonymous_id(number: int) -> str:
    """``agentN`` for agent number ``number`` (from 1). Cached: every label's author is
    asked for again and again (an agent merging the answers it is shown, a scripted voter
    choosing), some 16 times per agent of a big run. Errors are not cached."""
    if number < 1:
        raise ValueError(f"an agent number counts from 1, got {number}")
    return f"{_PREFIX}{number}"


@attrs.frozen(order=False)
class Label:
    """``agentN.M``: the ``seq``-th answer of agent number ``number``. Orders by agent, then
    by answer, so the newest answer of an agent is the greatest of its labels.

    The comparisons are written out: attrs' generated ones build two tuples through
    generators on every call, and agents sort labels for every prompt (15 % of a 100-agent
    run's CPU, as profiled)."""

    number: int = attrs.field(validator=attrs.validators.ge(1))
    seq: int = attrs.field(validator=attrs.validators.ge(1))

    @classmethod
    def of(cls, author: str, seq: int) -> Label:
        """The ``seq``-th answer of the agent whose anonymous id is ``author``."""
        return cls.parse(f"{author}.{seq}")

    @classmethod
    def parse(cls, text: str) -> Label:
        return _parse(text)

    @property
    def author(self) -> str:
        """The anonymous id of the agent that wrote the answer: ``agentN``."""
        return anonymous_id(self.number)

    def __str__(self) -> str:
        return f"{self.author}.{self.seq}"

    def __lt__(self, other: Label) -> bool:
        return (self.number, self.seq) < (other.number, other.seq)

    def __le__(self, other: Label) -> bool:
        return (self.number, self.seq) <= (other.number, other.seq)

    def __gt__(self, other: Label) -> bool:
        return (self.number, self.seq) > (other.number, other.seq)

    def __ge__(self, other: Label) -> bool:
        return (self.number, self.seq) >= (other.number, other.seq)


@functools.lru_cache(maxsize=4096)
def _parse(text: str) -> Label:
    """Cached: agents sort and compare the same few labels over and over (76 parses per
    3-agent run, 2 % of a batch of runs' CPU uncached, as profiled); labels are immutable, so one
    instance serves every caller. Errors are not cached."""
    found = _LABEL.fullmatch(text)
    if found is None:
        raise ValueError(
            f"{text!r} is not an answer label; expected agentN.M with N and M from 1, "
            "such as agent2.1"
        )
    return Label(int(found.group(1)), int(found.group(2)))
