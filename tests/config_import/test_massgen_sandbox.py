"""MassGen's command-line execution (config/massgen_sandbox.py): docker mode becomes the
run's docker sandbox with its image, memory and network, instead of being dropped; what has
no equivalent is dropped with a note saying what to do instead."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from conclave.config.loader import load_config
from conclave.config.massgen import Conversion, NoteKind, convert_massgen
from conclave.config.massgen_sandbox import memory_mb
from conclave.config.schema.sandbox import SandboxKind

CONFIGS = Path(__file__).parent / "massgen"


def _docker_mode() -> Conversion:
    data = yaml.safe_load((CONFIGS / "docker_mode.yaml").read_text(encoding="utf-8"))
    return convert_massgen(data)


def _one(**backend: Any) -> Conversion:
    data = {"agents": [{"id": "a", "backend": {"type": "claude", "model": "m", **backend}}]}
    return convert_massgen(data)


def _notes(conversion: Conversion, kind: NoteKind) -> dict[str, str]:
    return {n.path: n.message for n in conversion.notes if n.kind is kind}


def test_docker_mode_becomes_the_runs_docker_sandbox() -> None:
    orchestrator = _docker_mode().config["orchestrator"]

    assert orchestrator["tools"] is True
    assert orchestrator["sandbox"] == {
        "type": "docker",
        "image": "massgen/mcp-runtime:latest",
        "memory_mb": 2048,
        "network": True,
    }


def test_the_converted_docker_sandbox_loads(tmp_path: Path) -> None:
    path = tmp_path / "conclave.yaml"
    path.write_text(yaml.safe_dump(_docker_mode().config), encoding="utf-8")

    sandbox = load_config(path).orchestrator.sandbox

    assert (sandbox.type, sandbox.image, sandbox.memory_mb, sandbox.network) == (
        SandboxKind.DOCKER,
        "massgen/mcp-runtime:latest",
        2048,
        True,
    )


def test_the_largest_memory_limit_applies_and_the_note_says_so() -> None:
    changed = _notes(_docker_mode(), NoteKind.CHANGED)

    assert "the largest, 2048 MiB" in changed["agents[0].backend.command_line_docker_memory_limit"]


def test_what_docker_has_and_conclave_does_not_is_dropped_with_a_reason() -> None:
    dropped = _notes(_docker_mode(), NoteKind.DROPPED)

    assert "cpu_seconds" in dropped["agents[0].backend.command_line_docker_cpu_limit"]
    assert "no sudo" in dropped["agents[1].backend.command_line_docker_enable_sudo"]
    assert "by pattern" in dropped["agents[1].backend.command_line_blocked_commands"]


def test_the_shell_tool_becomes_orchestrator_tools() -> None:
    conversion = _one(enable_mcp_command_line=True)

    assert conversion.config["orchestrator"] == {"tools": True}
    assert (
        "orchestrator.tools"
        in _notes(conversion, NoteKind.CHANGED)["agents[0].backend.enable_mcp_command_line"]
    )


def test_no_image_named_keeps_conclaves_image() -> None:
    conversion = _one(command_line_execution_mode="docker")

    assert conversion.config["orchestrator"]["sandbox"] == {"type": "docker"}


def test_network_none_stays_off() -> None:
    conversion = _one(command_line_execution_mode="docker", command_line_docker_network_mode="none")

    assert conversion.config["orchestrator"]["sandbox"] == {"type": "docker"}


def test_network_is_on_only_when_every_docker_agent_asked() -> None:
    data = {
        "agents": [
            {
                "id": i,
                "backend": {
                    "type": "claude",
                    "model": "m",
                    "command_line_execution_mode": "docker",
                    "command_line_docker_network_mode": mode,
                },
            }
            for i, mode in (("a", "bridge"), ("b", "none"))
        ]
    }
    conversion = convert_massgen(data)

    assert "network" not in conversion.config["orchestrator"]["sandbox"]
    assert (
        "no network for any"
        in _notes(conversion, NoteKind.CHANGED)[
            "agents[0].backend.command_line_docker_network_mode"
        ]
    )


def test_a_local_agent_beside_a_docker_one_runs_in_docker_too() -> None:
    shell = {"type": "claude", "model": "m", "enable_mcp_command_line": True}
    docker = {"type": "claude", "model": "m", "command_line_execution_mode": "docker"}
    data = {"agents": [{"id": "a", "backend": shell}, {"id": "b", "backend": docker}]}
    conversion = convert_massgen(data)

    assert conversion.config["orchestrator"]["sandbox"]["type"] == "docker"
    assert "run in docker too" in _notes(conversion, NoteKind.CHANGED)["agents[0].backend"]


def test_docker_settings_of_a_local_agent_are_dropped() -> None:
    conversion = _one(command_line_docker_memory_limit="2g")

    assert "orchestrator" not in conversion.config
    assert (
        "docker mode only"
        in _notes(conversion, NoteKind.DROPPED)[
            "agents[0].backend.command_line_docker_memory_limit"
        ]
    )


def test_srt_mode_becomes_the_local_sandbox() -> None:
    conversion = _one(command_line_execution_mode="srt")

    assert "orchestrator" not in conversion.config
    assert (
        "bubblewrap"
        in _notes(conversion, NoteKind.CHANGED)["agents[0].backend.command_line_execution_mode"]
    )


def test_an_unreadable_memory_limit_is_dropped_naming_it() -> None:
    conversion = _one(command_line_execution_mode="docker", command_line_docker_memory_limit="lots")

    assert conversion.config["orchestrator"]["sandbox"] == {"type": "docker"}
    assert (
        "'lots' is not a memory size"
        in _notes(conversion, NoteKind.DROPPED)[
            "agents[0].backend.command_line_docker_memory_limit"
        ]
    )


@pytest.mark.parametrize(
    ("given", "mib"),
    [
        ("2g", 2048),
        ("512m", 512),
        ("1.5G", 1536),
        ("262144k", 256),
        (1073741824, 1024),
        ("2gb", 2048),
    ],
)
def test_docker_memory_sizes_are_read_in_mib(given: object, mib: int) -> None:
    assert memory_mb(given) == mib


@pytest.mark.parametrize("given", ["lots", "", "-1g", True, 0, "0m"])
def test_what_is_not_a_memory_size_is_none(given: object) -> None:
    assert memory_mb(given) is None
