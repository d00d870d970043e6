"""Where agents' shell commands run: ``local`` (bubblewrap where present) or ``docker``."""

from conclave.actors.sandbox.open import DockerEngine, open_docker_engine, open_sandbox
from conclave.actors.sandbox.protocol import (
    Mount,
    RunDirs,
    Sandbox,
    SandboxKind,
    SandboxUnavailable,
    ShellOutcome,
)

__all__ = [
    "DockerEngine",
    "Mount",
    "RunDirs",
    "Sandbox",
    "SandboxKind",
    "SandboxUnavailable",
    "ShellOutcome",
    "open_docker_engine",
    "open_sandbox",
]
