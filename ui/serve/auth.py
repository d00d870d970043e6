"""Who may use the server: the bearer token, the ``Origin`` check, and where it may listen.

Any web page a person visits can open a websocket to 127.0.0.1, so listening on localhost
is no protection by itself: every connection must present the server's token, and a request
from a browser page (it carries ``Origin``) must come from an origin the server allows.

A client presents the token in one of three ways, the first found wins:

1. the ``Authorization: Bearer TOKEN`` header (any client that can set headers);
2. a subprotocol ``conclave.bearer.TOKEN`` among those it proposes (browsers cannot set
   headers on a WebSocket; they propose ``["conclave.v1", "conclave.bearer.TOKEN"]``, and
   the server selects ``conclave.v1``, never echoing the token);
3. an ``auth`` message, first thing after connecting.

A token presented in the handshake and wrong is refused there (HTTP 401); with none, the
connection opens and waits for ``auth``.
"""

from __future__ import annotations

import ipaddress
import re
import secrets
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = [
    "BEARER_PREFIX",
    "SUBPROTOCOL",
    "TokenError",
    "generate_token",
    "is_local_host",
    "normalise_origin",
    "presented_token",
    "read_token_file",
    "refused_origin",
    "token_matches",
]

SUBPROTOCOL = "conclave.v1"
"""The subprotocol the server selects when a client proposes it."""
BEARER_PREFIX = "conclave.bearer."
"""A proposed subprotocol starting with this carries the token after it."""
MIN_TOKEN_CHARS = 16
_TOKEN = re.compile(r"[A-Za-z0-9._~+/=-]+")
"""Characters a token may hold: what a header and a subprotocol (an HTTP token) can carry
(``token_urlsafe`` writes a subset)."""


class TokenError(Exception):
    """The token file cannot be used; the message says why and what to do."""


def generate_token() -> str:
    """A new random token: 256 bits, URL-safe, usable as a subprotocol."""
    return secrets.token_urlsafe(32)


def read_token_file(path: str) -> str:
    """The token in ``path`` (surrounding whitespace ignored), or :class:`TokenError`."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise TokenError(f"--token-file {path}: not UTF-8 text; write the token as text") from None
    except OSError as exc:
        raise TokenError(f"--token-file {path}: cannot read it ({exc.strerror or exc})") from None
    token = text.strip()
    if len(token) < MIN_TOKEN_CHARS or not _TOKEN.fullmatch(token):
        raise TokenError(
            f"--token-file {path}: expected one token of at least {MIN_TOKEN_CHARS} characters "
            "from A-Z a-z 0-9 . _ ~ + / = -, got "
            + ("an empty file" if not token else f"{len(token)} characters")
            + "; generate one with: python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    return token


def is_local_host(host: str) -> bool:
    """Whether listening on ``host`` only takes connections from this machine: ``localhost``
    or a loopback address (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # another name: it may resolve to any interface


def token_matches(given: str, expected: str) -> bool:
    """In constant time, whatever the lengths."""
    return secrets.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def presented_token(headers: Iterable[tuple[bytes, bytes]], proposed: Sequence[str]) -> str | None:
    """The token the handshake carries (header first, then subprotocol), or ``None``."""
    for name, value in headers:
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").strip().partition(" ")
            if scheme.lower() == "bearer":
                return token.strip()
            return ""  # some other scheme: presented, and wrong
    for subprotocol in proposed:
        if subprotocol.startswith(BEARER_PREFIX):
            return subprotocol[len(BEARER_PREFIX) :]
    return None


def normalise_origin(origin: str) -> str:
    """``Origin`` as browsers send it: scheme://host[:port], lower case, no trailing slash."""
    return origin.strip().rstrip("/").lower()


def refused_origin(headers: Iterable[tuple[bytes, bytes]], allowed: frozenset[str]) -> str | None:
    """The request's ``Origin`` if it is not allowed, else ``None`` (no ``Origin``: not a
    browser page, so the token alone decides)."""
    for name, value in headers:
        if name.lower() == b"origin":
            origin = value.decode("latin-1")
            return None if normalise_origin(origin) in allowed else origin
    return None
