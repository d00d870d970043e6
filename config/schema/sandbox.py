"""The ``orchestrator.sandbox`` section: where an agent's ``run_shell`` commands run."""

from __future__ import annotations

import enum

import attrs

from conclave.config.limits import MAX_TIMEOUT_S
from conclave.config.schema.checks import seconds, whole

__all__ = ["SandboxConfig", "SandboxKind"]


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


@attrs.frozen(kw_only=True)
class SandboxConfig:
    type: SandboxKind = SandboxKind.LOCAL
    image: str = attrs.field(default="conclave-sandbox:latest", validator=_image)
    """The docker image; built locally by ``conclave sandbox build-image``, never pulled."""
    memory_mb: int = attrs.field(default=1024, validator=whole(16, 1_048_576))
    """Memory limit of a docker sandbox's container, in MiB."""
    pids: int = attrs.field(default=256, validator=whole(8, 1_000_000))
    """Processes a docker sandbox's container may hold at once (a fork bomb stops here)."""
    shell_timeout: float = attrs.field(default=120.0, validator=seconds(high=MAX_TIMEOUT_S))
    """Seconds a ``run_shell`` command may take when the model asks for no timeout."""
    max_output_bytes: int = attrs.field(default=1_048_576, validator=whole(1, 1 << 30))
    """Bytes of a command's output kept; the rest is counted as truncated."""
