"""The ``orchestrator.sandbox`` section: where an agent's ``run_shell`` commands run, what
they may reach (network, environment) and how much they may use."""

from __future__ import annotations

import enum
import re
from typing import Any

import attrs

from conclave.config.limits import MAX_TIMEOUT_S
from conclave.config.schema.checks import InvalidValue, seconds, whole

__all__ = ["SandboxConfig", "SandboxEnv", "SandboxKind"]


class SandboxKind(enum.Enum):
    LOCAL = "local"
    """A process group in the workspace; inside bubblewrap where it is installed."""
    DOCKER = "docker"
    """One long-lived container per agent, built from ``conclave-sandbox:latest``."""


def _image(_inst: object, attr: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(
            f"{attr.name!r} must name a local image such as 'conclave-sandbox:latest'; "
            f"got {value!r}"
        )


_PATTERN = re.compile(r"^[A-Za-z0-9_*?\[\]!-]+$")
_PATTERN_RULE = "variable names or shell-style patterns such as AWS_* (letters, digits, _, *, ?)"


def _patterns(_inst: object, attr: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, tuple):
        raise InvalidValue(
            f"{attr.name!r} must be a list of {_PATTERN_RULE}; got {value!r}",
            expected=f"a list of {_PATTERN_RULE}",
        )
    for pattern in value:
        if not isinstance(pattern, str) or not _PATTERN.match(pattern):
            raise InvalidValue(
                f"{attr.name!r}: {pattern!r} is not a variable name or pattern; use "
                f"{_PATTERN_RULE}",
                expected=_PATTERN_RULE,
            )


@attrs.frozen(kw_only=True)
class SandboxEnv:
    """Which of Conclave's environment variables a sandboxed command gets. A name matching
    ``allow`` is passed; else one matching ``deny``, or whose name looks like a secret
    (``*_API_KEY``, ``*_TOKEN``, ``*PASSWORD*``...), is withheld; every other is passed
    (local sandbox). A docker sandbox starts from an empty environment: only ``allow``'s
    variables pass. Patterns are shell-style (``AWS_*``), matched case-sensitively."""

    allow: tuple[str, ...] = attrs.field(default=(), validator=_patterns)
    deny: tuple[str, ...] = attrs.field(default=(), validator=_patterns)


@attrs.frozen(kw_only=True)
class SandboxConfig:
    type: SandboxKind = SandboxKind.LOCAL
    image: str = attrs.field(default="conclave-sandbox:latest", validator=_image)
    """The docker image; built locally by ``conclave sandbox build-image``, never pulled."""
    network: bool = attrs.field(default=False, validator=attrs.validators.instance_of(bool))
    """Whether commands (and confined MCP servers) may use the network; off by default."""
    env: SandboxEnv = attrs.field(factory=SandboxEnv)
    memory_mb: int = attrs.field(default=1024, validator=whole(16, 1_048_576))
    """Memory, in MiB: a docker container's whole; each local process's data (heap)."""
    pids: int = attrs.field(default=256, validator=whole(8, 1_000_000))
    """Processes a sandbox may hold at once (a fork bomb stops here)."""
    cpu_seconds: int = attrs.field(default=600, validator=whole(1, 1_000_000))
    """CPU time one process may use, in seconds; then the kernel kills it (SIGKILL)."""
    shell_timeout: float = attrs.field(default=120.0, validator=seconds(high=MAX_TIMEOUT_S))
    """Seconds a ``run_shell`` command may take when the model asks for no timeout."""
    max_output_bytes: int = attrs.field(default=1_048_576, validator=whole(1, 1 << 30))
    """Bytes of a command's output kept; the rest is counted as truncated."""
