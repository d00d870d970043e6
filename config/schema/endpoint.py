"""What every HTTP backend section shares: the endpoint, its key, timeouts, limits and price.

``openai`` and ``anthropic`` sections extend :class:`HttpBackendConfig`. Agents whose
sections name the same endpoint and key share one client (one connection pool); the first
agent's ``max_concurrency`` and ``requests_per_minute`` on an endpoint apply to all of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar
from urllib.parse import urlsplit

import attrs

from conclave.config.limits import MAX_TIMEOUT_S
from conclave.config.schema.checks import InvalidValue, seconds, whole
from conclave.config.secret import Secret

__all__ = [
    "MAX_CONCURRENCY",
    "MAX_OUTPUT_TOKENS",
    "HttpBackendConfig",
    "Price",
    "Timeouts",
    "endpoint_host",
    "flag",
    "non_empty",
]

MAX_OUTPUT_TOKENS = 10_000_000
"""Reply tokens a config may ask for: past every model's limit, short of an overflow."""
MAX_CONCURRENCY = 10_000
"""Calls one endpoint may serve at once."""
MAX_RETRIES = 20
MAX_REQUESTS_PER_MINUTE = 1_000_000
MAX_PRICE_PER_MTOK = 1_000_000.0
"""Dollars per million tokens: far past any model's price; a bigger number is a typo."""

Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]

flag: Validator = attrs.validators.instance_of(bool)
"""A switch: ``true`` or ``false``, not a string or a number that looks like one."""


def _from_zero_to(value: Any, high: float) -> bool:
    """Whether ``value`` is a finite number (a ``bool`` is not one) from 0 to ``high``."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value <= high
    )


def _price(*, optional: bool = False) -> Validator:
    expected = f"a number of dollars from 0 to {MAX_PRICE_PER_MTOK:,.0f}" + (
        ", or null" if optional else ""
    )

    def check(_inst: object, attr: attrs.Attribute[Any], value: Any) -> None:
        if value is None and optional:
            return
        if not _from_zero_to(value, MAX_PRICE_PER_MTOK):
            raise InvalidValue(
                f"{attr.name!r} must be {expected}; got {value!r}", expected=expected
            )

    return check


def non_empty(*, optional: bool = False) -> Validator:
    """A string with something in it; ``None`` too with ``optional``."""

    def check(_inst: object, attr: attrs.Attribute[Any], value: Any) -> None:
        if value is None and optional:
            return
        if not isinstance(value, str) or not value.strip():
            raise InvalidValue(
                f"{attr.name!r} must be a non-empty string; got {value!r}",
                expected="a non-empty string",
            )

    return check


def _url(_inst: object, attr: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidValue(
            f"{attr.name!r} must be an http:// or https:// URL such as "
            f"https://api.openai.com/v1; got {value!r}",
            expected="an http:// or https:// URL",
        )


def _base_url(inst: object, attr: attrs.Attribute[Any], value: Any) -> None:
    """An endpoint's URL (:func:`_url`) without ``user:password@``: the backends send the
    key as a header, and the openai backend's own connections would ignore the part."""
    _url(inst, attr, value)
    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is not None and (parts.username is not None or parts.password is not None):
        # Never echoed: the part before the @ is a password more often than not.
        raise InvalidValue(
            f"{attr.name!r} must not carry a user name or password (user:password@host): "
            "give the key as api_key or api_key_env, and the URL without them",
            expected="a URL without user:password@",
        )


def _headers(_inst: object, attr: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise InvalidValue(
            f"{attr.name!r} must map header names to string values; got {value!r}",
            expected="a mapping of header names to strings",
        )


def _body(_inst: object, attr: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise InvalidValue(
            f"{attr.name!r} must be a mapping of request fields; got {value!r}",
            expected="a mapping of request fields",
        )


def _secret(_inst: object, attr: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not isinstance(value, Secret):
        raise ValueError(f"{attr.name!r} must be a Secret (a key), got {type(value).__name__}")
    if isinstance(value, Secret) and not value.reveal().strip():
        # Most often ${VAR} of a variable set to nothing: every request would be refused.
        raise InvalidValue(
            f"{attr.name!r} is empty; set the key (or the variable it names), or remove "
            f"{attr.name!r} to read the backend's api_key_env",
            expected="a key, or no api_key at all",
        )


@attrs.frozen(kw_only=True)
class Timeouts:
    """How long to wait for each thing a server owes a call. Separate limits, because a dead
    server and a model thinking look alike only from far away: a server that is alive
    starts its reply (status and headers) within seconds, even while its model thinks in
    silence for minutes before the first token; once tokens flow, they do not pause for
    long. With the defaults a server that accepts a request and never answers costs a round
    about a minute (three tries of ``first_byte`` and the waits between them)."""

    connect: float = attrs.field(default=10.0, validator=seconds(high=MAX_TIMEOUT_S))
    """Seconds to open a connection (a refused one fails at once)."""
    first_byte: float = attrs.field(default=20.0, validator=seconds(high=MAX_TIMEOUT_S))
    """Seconds from sending the request to the start of the reply (its status and headers).
    A server on this machine that loads its model, or reads a long prompt, before it starts
    the reply (Ollama, llama.cpp) may need more."""
    first_token: float = attrs.field(default=300.0, validator=seconds(high=MAX_TIMEOUT_S))
    """Seconds from the start of the reply to its first token (text, reasoning or a tool
    call): a reasoning model may think for minutes before it says anything."""
    stall: float = attrs.field(default=30.0, validator=seconds(high=MAX_TIMEOUT_S))
    """Seconds without a chunk once tokens flow: past it the stream has stalled."""
    total: float | None = attrs.field(
        default=None, validator=seconds(high=MAX_TIMEOUT_S, optional=True)
    )
    """Seconds for a whole call, retries included (``null``: only the round's own limits)."""


CHARS_PER_TOKEN_ESTIMATE = 3
"""How ``--max-cost`` counts a call whose server reported no usage: a token per 3 characters
sent or received. English prose makes about 4 characters a token, code and JSON about 3: the
estimate errs on more tokens, so a budget counted with it errs on stopping early, never on
spending past it."""


@attrs.frozen(kw_only=True)
class Price:
    """Dollars per million tokens, as the provider lists them; never fetched."""

    input_per_mtok: float = attrs.field(validator=_price())
    output_per_mtok: float = attrs.field(validator=_price())
    cached_input_per_mtok: float | None = attrs.field(default=None, validator=_price(optional=True))
    """Prompt tokens read from the provider's cache (``null``: the input price)."""
    cache_write_per_mtok: float | None = attrs.field(default=None, validator=_price(optional=True))
    """Prompt tokens written to the cache, where billed apart (``null``: the input price)."""


@attrs.frozen(kw_only=True)
class HttpBackendConfig:
    """Fields every HTTP backend has. ``extra_headers`` and ``extra_body`` take part in
    equality but not in the hash (mappings are not hashable)."""

    model: str = attrs.field(validator=non_empty())
    base_url: str | None = attrs.field(default=None, validator=_base_url)
    """``null``: the provider's own API."""
    api_key: Secret | None = attrs.field(default=None, validator=_secret)
    """``null``: read from the environment variable ``api_key_env`` when the run starts."""
    api_key_env: str = attrs.field(validator=non_empty())
    """Each backend type defaults it to its provider's standard variable."""
    temperature: float | None = attrs.field(default=None)
    extra_headers: dict[str, str] = attrs.field(factory=dict, validator=_headers, hash=False)
    """Sent with every request (OpenRouter's ``HTTP-Referer`` and ``X-Title``, a gateway's
    routing header)."""
    extra_body: dict[str, Any] = attrs.field(factory=dict, validator=_body, hash=False)
    """Merged into every request body, for server-specific options."""
    timeouts: Timeouts = attrs.field(factory=Timeouts)
    max_retries: int = attrs.field(default=2, validator=whole(0, MAX_RETRIES))
    """Times a request is sent again when it failed before its reply began in a way another
    attempt may mend (a 429, a 5xx, a lost connection), after a back-off with jitter or the
    server's ``Retry-After``; any other failure, and the last of these, is a failed try of
    the round."""
    max_concurrency: int = attrs.field(default=16, validator=whole(1, MAX_CONCURRENCY))
    """Calls the endpoint serves at once, across every agent on it."""
    requests_per_minute: int | None = attrs.field(
        default=None, validator=whole(1, MAX_REQUESTS_PER_MINUTE, optional=True)
    )
    """Requests the endpoint may receive in any minute, across every agent on it."""
    price: Price | None = None

    @temperature.validator
    def _check_temperature(self, attr: attrs.Attribute[Any], value: Any) -> None:
        high = self.max_temperature()
        if value is None:
            return
        if not _from_zero_to(value, high):
            raise InvalidValue(
                f"'temperature' must be a number from 0 to {high:g}; got {value!r}",
                expected=f"a number from 0 to {high:g}, or null",
            )

    def max_temperature(self) -> float:
        return 2.0

    DEFAULT_BASE_URL: ClassVar[str]
    """Each backend type's provider API, used without ``base_url``."""

    def endpoint_url(self) -> str:
        """Where this section's requests go: ``base_url``, else the provider's own API."""
        return self.base_url or self.DEFAULT_BASE_URL


def endpoint_host(base_url: str) -> str:
    """``host`` or ``host:port`` of a URL, as error messages name the endpoint."""
    parts = urlsplit(base_url)
    host = parts.hostname or base_url
    return f"{host}:{parts.port}" if parts.port else host
