"""MassGen's command-line execution settings, converted to Conclave's sandbox: the
``orchestrator.sandbox`` half of :mod:`config.massgen`.

MassGen sets command execution per backend: ``enable_mcp_command_line`` (a shell tool),
``command_line_execution_mode`` (``local``, ``docker``, or ``srt``, an OS-level sandbox), and
for docker ``command_line_docker_image`` (``massgen/mcp-runtime:latest`` when not given),
``command_line_docker_memory_limit`` (docker's ``2g``, ``512m``), ``_cpu_limit`` (cores),
``_network_mode`` (``none``, ``bridge``, ``host``), ``_enable_sudo``, ``_credentials`` and
``_packages``; ``command_line_allowed_commands`` / ``_blocked_commands`` filter commands by
pattern. Conclave has one sandbox for the run (``orchestrator.sandbox``), and its agents
get the shell with the file tools (``orchestrator.tools``).

What maps where, each with a note: a shell for any agent → ``tools: true``; docker for any
agent → ``sandbox.type: docker`` for the run (agents that asked for local run in docker too);
the image, when one is named → ``image`` (the first named, if agents differ); the memory
limit → ``memory_mb`` (the largest); network → ``network: true`` only when every docker agent
asked for it (``bridge`` or ``host``: Conclave's container gets docker's default network);
``srt`` → the local sandbox, bubblewrap where installed. The CPU cores, sudo, credentials,
packages and command filters have no equivalent and are dropped, saying what to do instead.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from conclave.config.massgen_mcp import Notes

__all__ = ["SANDBOX_KEYS", "SandboxRequest", "memory_mb", "merge_requests", "sandbox_request"]

SANDBOX_KEYS = frozenset(
    {
        "enable_mcp_command_line",
        "command_line_execution_mode",
        "command_line_docker_image",
        "command_line_docker_memory_limit",
        "command_line_docker_cpu_limit",
        "command_line_docker_network_mode",
        "command_line_docker_enable_sudo",
        "command_line_docker_credentials",
        "command_line_docker_packages",
        "command_line_allowed_commands",
        "command_line_blocked_commands",
    }
)
"""Backend keys this module converts (any other ``command_line_*`` key is dropped by it too)."""

_DROPS = {
    "command_line_docker_cpu_limit": "Conclave limits each process's CPU time "
    "(orchestrator.sandbox.cpu_seconds), not a container's cores",
    "command_line_docker_enable_sudo": "Conclave's sandbox commands get no sudo; install what "
    "they need in the image",
    "command_line_docker_credentials": "pass the variables a command needs with "
    "orchestrator.sandbox.env.allow (a docker sandbox gets only those)",
    "command_line_docker_packages": "install packages in the image (see 'conclave sandbox "
    "build-image')",
    "command_line_allowed_commands": "Conclave does not filter commands by pattern: the sandbox "
    "confines what they can reach",
    "command_line_blocked_commands": "Conclave does not filter commands by pattern: the sandbox "
    "confines what they can reach",
}
_DOCKER_ONLY = frozenset(
    {
        "command_line_docker_image",
        "command_line_docker_memory_limit",
        "command_line_docker_network_mode",
    }
)
_MEMORY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([bkmg]?)b?\s*$", re.IGNORECASE)
_UNIT_MIB = {"b": 1 / (1 << 20), "k": 1 / 1024, "m": 1, "g": 1024}
_NETWORK_MODES = ("none", "bridge", "host")


def memory_mb(value: object) -> int | None:
    """Docker's memory limit (``2g``, ``512m``, ``1073741824``: bytes without a unit) in
    whole MiB, or ``None`` when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return int(value / (1 << 20)) if value > 0 else None
    found = _MEMORY.match(value) if isinstance(value, str) else None
    if found is None:
        return None
    number, unit = float(found.group(1)), found.group(2).lower() or "b"
    mib = int(number * _UNIT_MIB[unit])
    return mib if mib > 0 else None


@attrs.frozen(kw_only=True)
class SandboxRequest:
    """What one agent's backend asked of command execution."""

    path: str
    """The backend's place in the MassGen config, for notes."""
    shell: bool = False
    docker: bool = False
    image: str | None = None
    memory_mb: int | None = None
    network: bool | None = None
    """``None``: not said (MassGen's default is ``none``)."""


def sandbox_request(notes: Notes, path: str, backend: dict[str, Any]) -> SandboxRequest | None:
    """One backend's command-line keys, noted; ``None`` when it has none."""
    given = {k: v for k, v in backend.items() if k in SANDBOX_KEYS or k.startswith("command_line")}
    if not given:
        return None
    mode = given.get("command_line_execution_mode", "local")
    docker = mode == "docker"
    fields: dict[str, Any] = {"path": path, "docker": docker}
    for key, value in given.items():
        where = f"{path}.{key}"
        if key == "enable_mcp_command_line":
            fields["shell"] = value is True
            if value is True:
                notes.changed(
                    where, "now orchestrator.tools: true (every agent gets file and shell tools)"
                )
            else:
                notes.dropped(where, "false is Conclave's default (no shell tool)")
        elif key == "command_line_execution_mode":
            _mode(notes, where, value)
        elif key in _DOCKER_ONLY and not docker:
            notes.dropped(where, f"it applies to docker mode only, and this agent's is {mode!r}")
        elif key == "command_line_docker_image":
            fields["image"] = value
            notes.changed(
                where,
                "now orchestrator.sandbox.image; Conclave never pulls an image: it must be on "
                "this machine (docker pull it) and have sh, setsid and timeout",
            )
        elif key == "command_line_docker_memory_limit":
            mib = memory_mb(value)
            if mib is None:
                notes.dropped(where, f"{value!r} is not a memory size such as '2g' or '512m'")
            else:
                fields["memory_mb"] = mib
                notes.changed(where, f"now orchestrator.sandbox.memory_mb: {mib}")
        elif key == "command_line_docker_network_mode":
            fields["network"] = _network(notes, where, value)
        elif key in _DROPS:
            notes.dropped(where, _DROPS[key])
        else:
            notes.dropped(where, "not a command-line setting Conclave has")
    return SandboxRequest(**fields)


def _mode(notes: Notes, where: str, value: object) -> None:
    if value == "docker":
        notes.changed(where, "now orchestrator.sandbox.type: docker (one container per agent)")
    elif value == "local":
        notes.changed(where, "Conclave's local sandbox (bubblewrap where installed) is the default")
    elif value == "srt":
        notes.changed(where, "now Conclave's local sandbox: bubblewrap where installed")
    else:
        notes.dropped(where, f"{value!r} is not a mode Conclave knows (local, docker, srt)")


def _network(notes: Notes, where: str, value: object) -> bool | None:
    if value not in _NETWORK_MODES:
        notes.dropped(where, f"{value!r} is not a network mode MassGen has (none, bridge, host)")
        return None
    if value == "none":
        notes.changed(where, "no network is Conclave's default (orchestrator.sandbox.network)")
        return False
    said = "" if value == "bridge" else " (docker's default network, not the host's)"
    notes.changed(where, f"now orchestrator.sandbox.network: true{said}")
    return True


def merge_requests(notes: Notes, requests: list[SandboxRequest]) -> tuple[bool, dict[str, Any]]:
    """Whether any agent asked for a shell, and the run's ``orchestrator.sandbox`` (empty for
    Conclave's defaults). Conclave has one sandbox per run: where agents disagree, a note says
    what was chosen."""
    shell = any(r.shell for r in requests)
    docker = [r for r in requests if r.docker]
    if not docker:
        return shell, {}
    sandbox: dict[str, Any] = {"type": "docker"}
    for other in requests:
        if not other.docker:
            notes.changed(
                other.path,
                "Conclave has one sandbox per run: this agent's commands run in docker too",
            )
    images = [r for r in docker if r.image is not None]
    if images:
        sandbox["image"] = images[0].image
        for other in images[1:]:
            if other.image != images[0].image:
                notes.dropped(
                    f"{other.path}.command_line_docker_image",
                    f"one image per run: {images[0].image!r}, the first named, is used",
                )
    limits = [r.memory_mb for r in docker if r.memory_mb is not None]
    if limits:
        sandbox["memory_mb"] = max(limits)
        if len(set(limits)) > 1:
            notes.changed(
                f"{docker[0].path}.command_line_docker_memory_limit",
                f"one limit per run: the largest, {max(limits)} MiB, applies to every agent",
            )
    wanted = [r.network is True for r in docker]
    if all(wanted):
        sandbox["network"] = True
    elif any(wanted):
        for asked in (r for r in docker if r.network is True):
            notes.changed(
                f"{asked.path}.command_line_docker_network_mode",
                "one network setting per run, and another docker agent has none: no network "
                "for any (set orchestrator.sandbox.network: true to give it to all)",
            )
    return shell, sandbox
