"""Projects: a directory that keeps what a line of work needs across sessions.

``conclave project init NAME`` makes ``NAME/`` with ``CONTEXT.md`` (what the work is about, in
the user's words), ``filepaths.json`` (the files that matter, ``{"path": "why"}``), ``runs/``
and ``deliverables/``. Run inside it (or below it), Conclave finds it: the interactive agent
reads ``CONTEXT.md`` and ``filepaths.json`` into its prompt; each run made there (launched by
the agent, a REPL turn, ``conclave run``) is linked under ``runs/`` (a symbolic link to the
run's log directory, which stays where runs go); and a final presentation's deliverable (the
run's ``final/`` workspace) is copied to ``deliverables/<run id>/``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path

import attrs

from conclave.actors.prompts.interactive import ProjectNote
from conclave.config.atomic_file import temporary_name

__all__ = [
    "CONTEXT_FILE",
    "DELIVERABLES",
    "FILEPATHS_FILE",
    "RUNS",
    "Project",
    "ProjectError",
    "find_project",
    "init_project",
    "keep_in_project",
]

CONTEXT_FILE = "CONTEXT.md"
FILEPATHS_FILE = "filepaths.json"
RUNS = "runs"
DELIVERABLES = "deliverables"
MAX_READ_BYTES = 64 * 1024
"""Of CONTEXT.md and filepaths.json read into the prompt; the rest is cut, saying so."""

_CONTEXT_TEMPLATE = """\
# {name}

What this project is about, for the agents: the goal, the constraints, what done looks like.
The interactive agent reads this file at the start of every session in this project.
"""


class ProjectError(Exception):
    """A project cannot be made or read; the message says what to do."""


@attrs.frozen(kw_only=True)
class Project:
    root: Path

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def runs(self) -> Path:
        return self.root / RUNS

    @property
    def deliverables(self) -> Path:
        return self.root / DELIVERABLES

    def note(self) -> ProjectNote:
        """CONTEXT.md and filepaths.json as the interactive agent's prompt quotes them."""
        return ProjectNote(
            name=self.name,
            context=_read(self.root / CONTEXT_FILE),
            filepaths=_read(self.root / FILEPATHS_FILE),
        )

    def link_run(self, log_dir: Path) -> Path | None:
        """Link ``log_dir`` as ``runs/<its name>``; ``None`` if the link could not be made
        (the run is not lost: its log stays where it is)."""
        link = self.runs / log_dir.name
        try:
            self.runs.mkdir(exist_ok=True)
            link.symlink_to(log_dir.resolve(), target_is_directory=True)
        except OSError:
            return None
        return link

    def keep(self, log_dir: Path | None, workspace: str | None) -> Path | None:
        """A finished run made in the project: its log directory linked under ``runs/``, and
        its deliverable (``workspace``: the final presentation's ``final/``, if any) copied
        to ``deliverables/<run id>/``; where the copy went, if one was made."""
        if log_dir is None:
            return None
        self.link_run(log_dir)
        if workspace is None:
            return None
        return self.save_deliverables(log_dir.name, Path(workspace))

    def save_deliverables(self, run_id: str, workspace: Path) -> Path | None:
        """Copy a final presentation's workspace to ``deliverables/<run_id>/``; ``None``
        when there was nothing to copy or the copy failed."""
        if not workspace.is_dir():
            return None
        target = self.deliverables / run_id
        try:
            shutil.copytree(workspace, target, symlinks=True)
        except OSError:
            return None
        return target


def _read(path: Path) -> str:
    try:
        with path.open("rb") as file:
            data = file.read(MAX_READ_BYTES + 1)
    except OSError as exc:
        return f"(cannot read {path.name}: {exc.strerror or exc})"
    text = data[:MAX_READ_BYTES].decode("utf-8", errors="replace")
    if len(data) > MAX_READ_BYTES:
        text += f"\n[cut: {path.name} is longer than {MAX_READ_BYTES} bytes]"
    return text


def is_project(directory: Path) -> bool:
    return (
        (directory / CONTEXT_FILE).is_file()
        and (directory / FILEPATHS_FILE).is_file()
        and (directory / RUNS).is_dir()
    )


def find_project(start: Path) -> Project | None:
    """The project ``start`` is in (itself or its nearest ancestor that is one), if any."""
    here = start.resolve()
    for directory in (here, *here.parents):
        if is_project(directory):
            return Project(root=directory)
    return None


def init_project(directory: Path) -> Project:
    """Make a project at ``directory`` (which must not exist, or be empty), whole or not at
    all: it is built in a hidden directory beside it, then renamed into place, so a write
    that fails (a full disk) leaves nothing behind, not even the parents it made. Raises
    :class:`ProjectError`."""
    name = directory.name
    if not name or name in (".", ".."):
        raise ProjectError(f"{str(directory)!r} is not a project name; give a new directory name")
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise ProjectError(
            f"{directory} already exists and is not an empty directory; choose another name"
        )
    parent = directory.parent
    made = _missing(parent)
    building: Path | None = None
    try:
        parent.mkdir(parents=True, exist_ok=True)
        building = parent / temporary_name(name, parent)
        building.mkdir()
        (building / CONTEXT_FILE).write_text(_CONTEXT_TEMPLATE.format(name=name), "utf-8")
        (building / FILEPATHS_FILE).write_text(json.dumps({}, indent=2) + "\n", "utf-8")
        (building / RUNS).mkdir()
        (building / DELIVERABLES).mkdir()
        os.rename(building, directory)  # over an empty directory too
    except OSError as exc:
        if building is not None:
            shutil.rmtree(building, ignore_errors=True)
        for made_directory in made:
            with contextlib.suppress(OSError):
                made_directory.rmdir()
        raise ProjectError(
            f"cannot create the project {directory}: {exc.strerror or exc}; nothing was made"
        ) from None
    return Project(root=Path(os.path.abspath(directory)))


def _missing(directory: Path) -> list[Path]:
    """``directory`` and its parents that do not exist yet, deepest first."""
    missing: list[Path] = []
    while not directory.exists() and directory != directory.parent:
        missing.append(directory)
        directory = directory.parent
    return missing


def keep_in_project(cwd: Path, log_dir: Path | None, workspace: str | None) -> Path | None:
    """:meth:`Project.keep` for a run made in ``cwd``, when ``cwd`` is in a project (a
    front end's direct runs: ``conclave run``, a REPL turn without the interactive agent)."""
    project = find_project(cwd)
    return project.keep(log_dir, workspace) if project is not None else None
