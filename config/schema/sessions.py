"""The ``sessions`` section: how long a directory's sessions are kept.

Sessions stay local (``.conclave/sessions`` in the directory they were started in); a
session unused for longer than ``retention_days`` is removed when the REPL or a run next
opens one there.
"""

from __future__ import annotations

import attrs

from conclave.config.schema.checks import whole

__all__ = ["MAX_RETENTION_DAYS", "SessionsConfig"]

MAX_RETENTION_DAYS = 36_500
"""A hundred years: past it, write ``null`` (keep forever)."""


@attrs.frozen(kw_only=True)
class SessionsConfig:
    retention_days: int | None = attrs.field(
        default=30, validator=whole(1, MAX_RETENTION_DAYS, optional=True)
    )
    """Days a session is kept after its last entry; ``null``: kept until removed by hand."""
