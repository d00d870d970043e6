"""Redaction: every secret removed from a string before it is shown, written or sent on.

Two passes, for two uses:

- :class:`Redactor` removes a fixed set of secret values: a run's (config.run_secrets), built
  once as the run starts, and applied where content enters the run (actors/run/redaction.py).
  It replaces each value's every occurrence, and the value as JSON escapes it (a tool call's
  arguments are JSON text), by ``[REDACTED]``.
- :func:`redact` is for error messages, above all: providers echo keys, or fragments of them,
  in their error bodies (a 401 often quotes the key it refused), and an SDK's exception text
  quotes the body. It removes the exact keys this process uses (every
  :class:`config.secret.Secret` made so far), the keys passed in, and anything shaped like a
  provider key: ``sk-…`` (OpenAI, Anthropic's ``sk-ant-…``, OpenRouter's ``sk-or-…``),
  ``gsk_…`` (Groq), ``xai-…``, ``AIza…`` (Google), and the token after ``Bearer``.

Both leave a value shorter than :data:`~config.secret.MIN_SECRET_LENGTH` alone: a local
server's placeholder key (``none``, ``ollama``) is no secret, and removing it would mangle
ordinary words.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from conclave.config.secret import MIN_SECRET_LENGTH, Secret, secrets_in_use

__all__ = ["NO_REDACTION", "REDACTED", "Redactor", "redact"]

REDACTED = "[REDACTED]"

_KEY_SHAPES = re.compile(
    r"(?<![A-Za-z0-9])(?:sk-|gsk_|xai-|AIza)[A-Za-z0-9_\-]{8,}"
    r"|(?<=Bearer )[A-Za-z0-9_\-.~+/=]{8,}",
    re.IGNORECASE,
)


class Redactor:
    """Replaces every occurrence of each of a set of secret values by ``[REDACTED]``.

    A call costs one substring search per value (and per escaped form) when nothing is
    found, which is nearly always: about 0.1 µs per value for a line of a few hundred
    characters (docs/security.md has the measurements). Longer values go first, so a value
    that contains another is removed whole."""

    def __init__(self, values: Iterable[str]) -> None:
        forms: set[str] = set()
        for value in values:
            if len(value) < MIN_SECRET_LENGTH:
                continue
            forms.add(value)
            forms.add(json.dumps(value)[1:-1])
            forms.add(json.dumps(value, ensure_ascii=False)[1:-1])
        self._forms = tuple(sorted(forms, key=len, reverse=True))

    @property
    def active(self) -> bool:
        """Whether there is anything to remove (a run without secrets skips redaction)."""
        return bool(self._forms)

    def __call__(self, text: str) -> str:
        for form in self._forms:
            if form in text:
                text = text.replace(form, REDACTED)
        return text


NO_REDACTION = Redactor(())


def redact(text: str, extra: Iterable[Secret | str] = ()) -> str:
    """``text`` with every key in use, every key in ``extra`` and every key-shaped string
    replaced by ``[REDACTED]``. Longer keys first, so a key that contains another is removed
    whole."""
    keys = set(secrets_in_use())
    keys.update(k.reveal() if isinstance(k, Secret) else k for k in extra)
    for key in sorted((k for k in keys if len(k) >= MIN_SECRET_LENGTH), key=len, reverse=True):
        if key in text:
            text = text.replace(key, REDACTED)
    return _KEY_SHAPES.sub(REDACTED, text)
