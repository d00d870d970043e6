"""Projects: found from inside, read by the interactive agent, runs linked under ``runs/``
and a final presentation's deliverable copied to ``deliverables/``."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import attrs
import pytest

from conclave.actors.interactive.project import (
    ProjectError,
    find_project,
    init_project,
    keep_in_project,
)
from conclave.config.schema import OrchestratorConfig, ScriptedBackendConfig
from conclave.config.schema.backends import ToolStep
from conclave.ui.exit_codes import ExitCode
from conclave.ui.project_command import project_init_command
from tests.interactive.helpers import panel, session


def _disk_full_after_the_first_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Path.write_text writes one file, then fails as a full disk does."""
    write_text = Path.write_text
    written: list[Path] = []

    def fails_after_one(self: Path, *args: object, **kwargs: object) -> int:
        if written:
            raise OSError(errno.ENOSPC, "No space left on device")
        written.append(self)
        return write_text(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "write_text", fails_after_one)


def test_a_project_is_found_from_a_directory_inside_it(tmp_path: Path) -> None:
    project = init_project(tmp_path / "atlas")
    inside = project.root / "src" / "deep"
    inside.mkdir(parents=True)
    found = find_project(inside)
    assert found is not None and found.root == project.root


def test_no_project_is_found_outside_one(tmp_path: Path) -> None:
    assert find_project(tmp_path) is None


def test_a_name_that_is_not_a_directory_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ProjectError, match="not a project name"):
        init_project(Path(".."))


def test_the_interactive_agent_reads_context_md_and_filepaths_json(tmp_path: Path) -> None:
    project = init_project(tmp_path / "atlas")
    (project.root / "CONTEXT.md").write_text("We are mapping the coastline.\n")
    (project.root / "filepaths.json").write_text(json.dumps({"coast.csv": "the survey"}))
    agent, _ = session(tmp_path, project=project)
    assert "We are mapping the coastline." in agent.system_prompt
    assert '{"coast.csv": "the survey"}' in agent.system_prompt


async def test_a_final_presentations_deliverable_goes_to_deliverables(tmp_path: Path) -> None:
    project = init_project(tmp_path / "atlas")
    write = ToolStep(tool="write_file", arguments={"path": "report.md", "content": "# Report\n"})
    writer = ScriptedBackendConfig(presentation_tool_steps=(write,))
    config = attrs.evolve(
        panel(),
        orchestrator=OrchestratorConfig(tools=True),
        agents=tuple(attrs.evolve(a, backend=writer) for a in panel().agents),
    )
    agent, _ = session(tmp_path, config=config, project=project)
    reply = await agent.turn("Write the coastline report")
    [outcome] = reply.outcomes
    assert outcome.run_id is not None and outcome.workspace_path is not None
    delivered = project.deliverables / outcome.run_id / "report.md"
    assert delivered.read_text() == "# Report\n"
    assert outcome.deliverables == str(project.deliverables / outcome.run_id)
    assert (project.runs / outcome.run_id).is_symlink()


def test_keep_links_the_run_and_copies_its_deliverable(tmp_path: Path) -> None:
    project = init_project(tmp_path / "atlas")
    log_dir = tmp_path / "logs" / "run-1"
    (log_dir / "final").mkdir(parents=True)
    (log_dir / "final" / "out.txt").write_text("done\n")
    copied = keep_in_project(project.root, log_dir, str(log_dir / "final"))
    assert copied == project.deliverables / "run-1"
    assert (project.deliverables / "run-1" / "out.txt").read_text() == "done\n"
    assert (project.runs / "run-1").resolve() == log_dir.resolve()


def test_keep_outside_a_project_does_nothing(tmp_path: Path) -> None:
    assert keep_in_project(tmp_path, tmp_path / "run-1", None) is None
    assert not (tmp_path / "runs").exists()


def test_a_project_whose_write_fails_partway_is_not_left_half_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _disk_full_after_the_first_file(monkeypatch)

    assert project_init_command("atlas") == ExitCode.USAGE

    assert list(tmp_path.iterdir()) == []
    assert capsys.readouterr().err == (
        "conclave project init: cannot create the project atlas: No space left on device; "
        "nothing was made\n"
    )


def test_a_project_whose_write_fails_leaves_none_of_the_parents_it_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _disk_full_after_the_first_file(monkeypatch)

    with pytest.raises(ProjectError, match="No space left on device"):
        init_project(tmp_path / "work" / "2026" / "atlas")

    assert list(tmp_path.iterdir()) == []


def test_a_project_whose_write_fails_leaves_the_empty_directory_it_was_given_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "atlas").mkdir()
    _disk_full_after_the_first_file(monkeypatch)

    with pytest.raises(ProjectError):
        init_project(tmp_path / "atlas")

    assert [p.name for p in tmp_path.iterdir()] == ["atlas"]
    assert list((tmp_path / "atlas").iterdir()) == []


def test_a_project_is_made_in_an_empty_directory_that_exists(tmp_path: Path) -> None:
    (tmp_path / "atlas").mkdir()

    project = init_project(tmp_path / "atlas")

    assert sorted(p.name for p in project.root.iterdir()) == [
        "CONTEXT.md", "deliverables", "filepaths.json", "runs",
    ]  # fmt: skip
    assert [p.name for p in tmp_path.iterdir()] == ["atlas"]
