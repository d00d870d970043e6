"""Where agents' shell commands run: ``local`` (bubblewrap where present) or ``docker``."""

from actors.sandbox.protocol import Mount, Sandbox, SandboxKind, SandboxUnavailable, ShellOutcome

__all__ = ["Mount", "Sandbox", "SandboxKind", "SandboxUnavailable", "ShellOutcome"]
