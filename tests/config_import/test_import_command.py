"""``conclave import massgen``: one line per key changed or dropped, exit 0 only when the
result validates, and the output written whole or not at all, never over a file without
``--force``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from conclave.config.loader import load_config
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode

CONFIGS = Path(__file__).parent / "massgen"
VALID = CONFIGS / "with_ui.yaml"
"""A MassGen config whose conversion validates: two agents, timeouts and a UI section."""


def _write(path: Path, data: object) -> Path:
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _invalid(tmp_path: Path) -> Path:
    """Converts, but not into a valid config: Anthropic's temperature stops at 1."""
    agent = {"id": "a", "backend": {"type": "claude", "model": "m", "temperature": 1.5}}
    return _write(tmp_path / "hot.yaml", {"agent": agent})


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_a_converted_config_is_written_to_the_output_and_loads(tmp_path: Path) -> None:
    out = tmp_path / "conclave.yaml"

    assert main(["import", "massgen", str(VALID), "-o", str(out)]) == ExitCode.OK

    config = load_config(out)
    assert [a.id for a in config.agents] == ["agent1", "agent2"]
    assert config.orchestrator.run_timeout == 900


def test_the_documented_mixed_panel_converts_into_a_config_that_loads(tmp_path: Path) -> None:
    out = tmp_path / "conclave.yaml"

    code = main(["import", "massgen", str(CONFIGS / "mixed_panel.yaml"), "-o", str(out)])

    assert code == ExitCode.OK
    config = load_config(out)
    assert [a.backend.type for a in config.agents] == [
        "openai", "openai", "anthropic", "openai", "openai",
    ]  # fmt: skip
    assert config.agents[0].system_prompt == "You are a researcher"


def test_the_documented_single_agent_converts_into_a_config_that_loads(tmp_path: Path) -> None:
    out = tmp_path / "conclave.yaml"

    assert main(["import", "massgen", str(CONFIGS / "single_agent.yaml"), "-o", str(out)]) == 0

    assert load_config(out).agents[0].system_prompt == "You are a helpful assistant"


def test_a_context_path_that_exists_converts_into_one_conclave_reads(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    agent = {"id": "a", "backend": {"type": "claude", "model": "m"}}
    paths = [{"path": str(project), "permission": "write"}]
    source = _write(tmp_path / "m.yaml", {"agent": agent, "orchestrator": {"context_paths": paths}})
    out = tmp_path / "conclave.yaml"

    assert main(["import", "massgen", str(source), "-o", str(out)]) == ExitCode.OK

    (context,) = load_config(out).orchestrator.context_paths
    assert context.path == project.resolve()
    assert context.writable


def test_a_context_path_missing_here_converts_and_names_the_path_to_create(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "conclave.yaml"
    source = CONFIGS / "tools_to_drop.yaml"

    assert main(["import", "massgen", str(source), "-o", str(out)]) == ExitCode.OK

    assert (
        "conclave import massgen: the config names the context path '/Users/me/project/src', "
        "which does not exist here; create it before running the config, or edit the path"
    ) in capsys.readouterr().err.splitlines()
    written = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert written["orchestrator"]["context_paths"] == [
        {"path": "/Users/me/project/src", "permission": "read"}
    ]


def test_a_relative_context_path_to_create_is_named_with_where_it_would_be(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    agent = {"id": "a", "backend": {"type": "claude", "model": "m"}}
    paths = [{"path": "src"}]
    source = _write(tmp_path / "m.yaml", {"agent": agent, "orchestrator": {"context_paths": paths}})

    assert main(["import", "massgen", str(source)]) == ExitCode.OK

    assert f"context path 'src' (here: {tmp_path.resolve() / 'src'})" in capsys.readouterr().err


def test_a_missing_context_path_does_not_hide_the_other_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = {"id": "a", "backend": {"type": "claude", "model": "m", "temperature": 1.5}}
    paths = [{"path": str(tmp_path / "absent")}]
    source = _write(tmp_path / "m.yaml", {"agent": agent, "orchestrator": {"context_paths": paths}})
    out = tmp_path / "conclave.yaml"

    assert main(["import", "massgen", str(source), "-o", str(out)]) == ExitCode.USAGE

    err = capsys.readouterr().err
    assert "agents[0].backend.temperature" in err
    assert f"context path '{tmp_path / 'absent'}' does not exist" in err
    assert not out.exists()


def test_a_config_with_a_missing_context_path_is_still_checked_as_a_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agents = [{"id": f"a{i}", "backend": {"type": "claude", "model": "m"}} for i in range(257)]
    paths = [{"path": str(tmp_path / "absent")}]
    source = _write(
        tmp_path / "m.yaml", {"agents": agents, "orchestrator": {"context_paths": paths}}
    )

    assert main(["import", "massgen", str(source)]) == ExitCode.USAGE

    err = capsys.readouterr().err
    assert "orchestrator.visibility: visibility 'all' with 257 agents is all-to-all" in err
    assert f"context path '{tmp_path / 'absent'}' does not exist" in err


def test_massgens_cwd_is_the_directory_the_run_starts_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("cwd", raising=False)
    project = tmp_path / "project"
    (project / "docs" / "drafts").mkdir(parents=True)
    monkeypatch.chdir(project)
    agent = {"id": "a", "backend": {"type": "claude", "model": "m"}}
    paths = [
        {
            "path": "${cwd}/docs",
            "permission": "write",
            "protected_paths": ["${cwd}/docs/drafts"],
        }
    ]
    source = _write(tmp_path / "m.yaml", {"agent": agent, "orchestrator": {"context_paths": paths}})
    out = tmp_path / "conclave.yaml"

    assert main(["import", "massgen", str(source), "-o", str(out)]) == ExitCode.OK

    (context,) = load_config(out).orchestrator.context_paths
    assert context.path == (project / "docs").resolve()
    assert context.protected == ((project / "docs" / "drafts").resolve(),)


def test_massgens_cwd_is_not_reported_as_an_unset_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("cwd", raising=False)
    monkeypatch.chdir(tmp_path)
    agent = {"id": "a", "backend": {"type": "claude", "model": "m"}}
    paths = [{"path": "${cwd}"}]
    source = _write(tmp_path / "m.yaml", {"agent": agent, "orchestrator": {"context_paths": paths}})

    assert main(["import", "massgen", str(source)]) == ExitCode.OK

    assert "which is not set here" not in capsys.readouterr().err


def test_without_an_output_the_config_goes_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["import", "massgen", str(VALID)]) == ExitCode.OK

    out = yaml.safe_load(capsys.readouterr().out)
    assert [a["id"] for a in out["agents"]] == ["agent1", "agent2"]


def test_every_changed_or_dropped_key_is_one_line_on_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main(["import", "massgen", str(VALID)])

    lines = capsys.readouterr().err.splitlines()
    assert "conclave import massgen: dropped: ui: " in "\n".join(lines)
    assert sum(": dropped: " in line for line in lines) == 1
    assert sum(": changed: " in line for line in lines) == 3


def test_the_last_line_sums_up_agents_and_notes(capsys: pytest.CaptureFixture[str]) -> None:
    main(["import", "massgen", str(VALID)])

    last = capsys.readouterr().err.splitlines()[-1]
    assert last == "conclave import massgen: converted: 2 agents (2 openai); 3 changed, 1 dropped"


def test_a_result_that_does_not_validate_exits_2_naming_the_problem_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "conclave.yaml"

    code = main(["import", "massgen", str(_invalid(tmp_path)), "-o", str(out)])

    assert code == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "does not validate, so nothing was written" in err
    assert "'temperature' must be a number from 0 to 1" in err
    assert not out.exists()
    assert _leftovers(tmp_path) == []


def test_a_result_that_does_not_validate_prints_nothing_on_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", "massgen", str(_invalid(tmp_path))]) == ExitCode.USAGE

    assert capsys.readouterr().out == ""


def test_a_config_whose_every_agent_is_dropped_does_not_validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    only = {"agent": {"id": "coder", "backend": {"type": "claude_code", "cwd": "w"}}}

    assert main(["import", "massgen", str(_write(tmp_path / "cc.yaml", only))]) == 2

    assert "at least one agent" in capsys.readouterr().err


def test_an_existing_output_is_not_replaced_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "conclave.yaml"
    out.write_text("mine\n")

    assert main(["import", "massgen", str(VALID), "-o", str(out)]) == ExitCode.USAGE

    assert out.read_text() == "mine\n"
    assert "exists; pass --force" in capsys.readouterr().err


def test_force_replaces_an_existing_output(tmp_path: Path) -> None:
    out = tmp_path / "conclave.yaml"
    out.write_text("mine\n")

    assert main(["import", "massgen", str(VALID), "-o", str(out), "--force"]) == ExitCode.OK

    assert len(load_config(out).agents) == 2
    assert _leftovers(tmp_path) == []


def test_a_written_config_leaves_no_temporary_file(tmp_path: Path) -> None:
    main(["import", "massgen", str(VALID), "-o", str(tmp_path / "conclave.yaml")])

    assert _leftovers(tmp_path) == []


def test_an_output_whose_name_is_as_long_as_the_file_system_allows_is_written(
    tmp_path: Path,
) -> None:
    out = tmp_path / ("c" * 250 + ".yaml")  # 255 characters: the most most systems allow

    assert main(["import", "massgen", str(VALID), "-o", str(out)]) == ExitCode.OK

    assert len(load_config(out).agents) == 2
    assert _leftovers(tmp_path) == []


def test_a_write_that_fails_leaves_neither_output_nor_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    out = tmp_path / "conclave.yaml"

    assert main(["import", "massgen", str(VALID), "-o", str(out)]) == ExitCode.USAGE

    assert not out.exists()
    assert _leftovers(tmp_path) == []
    assert "No space left on device" in capsys.readouterr().err


def test_an_output_that_is_a_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", "massgen", str(VALID), "-o", str(tmp_path)]) == ExitCode.USAGE

    assert "is a directory" in capsys.readouterr().err


def test_a_missing_input_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.yaml"

    assert main(["import", "massgen", str(missing)]) == ExitCode.USAGE

    assert f"cannot read {missing}" in capsys.readouterr().err


def test_input_that_is_not_yaml_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("agents: [unclosed\n")

    assert main(["import", "massgen", str(broken)]) == ExitCode.USAGE

    assert "not valid YAML" in capsys.readouterr().err


def test_input_that_is_not_a_massgen_config_exits_2_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = _write(tmp_path / "other.yaml", {"models": ["a"]})

    assert main(["import", "massgen", str(other)]) == ExitCode.USAGE

    assert "neither 'agents' nor 'agent'" in capsys.readouterr().err


def test_the_written_file_says_where_it_came_from(tmp_path: Path) -> None:
    out = tmp_path / "conclave.yaml"

    main(["import", "massgen", str(VALID), "-o", str(out)])

    assert out.read_text().startswith(f"# Converted from the MassGen config {VALID}")
