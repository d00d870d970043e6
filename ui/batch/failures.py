"""``--max-failures``: stop a batch that is failing wholesale (a wrong key, an endpoint that
is down) instead of running every task into the same error.

``N`` stops once N runs of this invocation have failed (after their ``--retries``); ``P%``
once that share of its finished runs have, judged only from :data:`MIN_RUNS_FOR_SHARE`
finished runs on (one early failure is not a trend). Stopping is ``--max-cost``'s: no run
starts, those in flight finish and are written, the rest run on resume.
"""

from __future__ import annotations

import attrs

__all__ = ["MIN_RUNS_FOR_SHARE", "FailureLimit", "failure_limit"]

MIN_RUNS_FOR_SHARE = 10


@attrs.frozen(kw_only=True)
class FailureLimit:
    count: int | None = None
    share: float | None = None
    """From 0 (exclusive) to 1."""

    def reached(self, failed: int, finished: int) -> bool:
        if self.count is not None:
            return failed >= self.count
        assert self.share is not None
        return finished >= MIN_RUNS_FOR_SHARE and failed >= self.share * finished

    def describe(self) -> str:
        if self.count is not None:
            return f"{self.count:,} failed runs"
        assert self.share is not None
        return f"{self.share:.0%} of runs failed"


def failure_limit(text: str) -> FailureLimit:
    """``N`` (a whole number >= 1) or ``P%`` (more than 0, at most 100), checked already by
    the flag's parser (:func:`ui.batch.arguments.failure_limit_text`)."""
    if text.endswith("%"):
        return FailureLimit(share=float(text[:-1]) / 100)
    return FailureLimit(count=int(text))
