"""One redaction pass for every string that may carry a key: error messages above all.

Providers echo keys, or fragments of them, in their error bodies (a 401 often quotes the key
it refused), and an SDK's exception text quotes the body. Before such a string reaches an
event, a result, stderr or a file, :func:`redact` removes:

- the exact keys this process uses (every :class:`config.secret.Secret` made so far), and
- anything shaped like a provider key: ``sk-…`` (OpenAI, Anthropic's ``sk-ant-…``,
  OpenRouter's ``sk-or-…``), ``gsk_…`` (Groq), ``xai-…``, ``AIza…`` (Google), and the token
  after ``Bearer``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from conclave.config.secret import Secret, secrets_in_use

__all__ = ["REDACTED", "redact"]

REDACTED = "[REDACTED]"
_MIN_KEY = 8

_KEY_SHAPES = re.compile(
    r"(?<![A-Za-z0-9])(?:sk-|gsk_|xai-|AIza)[A-Za-z0-9_\-]{8,}"
    r"|(?<=Bearer )[A-Za-z0-9_\-.~+/=]{8,}",
    re.IGNORECASE,
)


def redact(text: str, extra: Iterable[Secret | str] = ()) -> str:
    """``text`` with every key in use, every key in ``extra`` and every key-shaped string
    replaced by ``[REDACTED]``. Longer keys first, so a key that contains another is removed
    whole. Values shorter than 8 characters are left alone: a local server's placeholder
    key (``none``, ``ollama``) is no secret, and removing it would mangle ordinary words."""
    keys = set(secrets_in_use())
    keys.update(k.reveal() if isinstance(k, Secret) else k for k in extra)
    for key in sorted((k for k in keys if len(k) >= _MIN_KEY), key=len, reverse=True):
        if key in text:
            text = text.replace(key, REDACTED)
    return _KEY_SHAPES.sub(REDACTED, text)
