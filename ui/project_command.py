"""``conclave project init NAME``: a project directory (:mod:`actors.interactive.project`)."""

from __future__ import annotations

import sys
from pathlib import Path

from conclave.actors.interactive.project import (
    CONTEXT_FILE,
    FILEPATHS_FILE,
    ProjectError,
    init_project,
)
from conclave.ui.exit_codes import ExitCode
from conclave.ui.text import display_path

__all__ = ["project_init_command"]


def project_init_command(name: str) -> int:
    """Create the project; exit 2 (a usage error) when ``name`` cannot be one."""
    try:
        project = init_project(Path(name))
    except ProjectError as exc:
        print(f"conclave project init: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    except OSError as exc:
        # init_project only looks at and creates ``name``: an OSError its checks let through
        # (a name too long, a symbolic link loop) is a problem with the name given.
        print(
            f"conclave project init: cannot create the project {display_path(name)}: "
            f"{exc.strerror or exc}; choose another name",
            file=sys.stderr,
        )
        return ExitCode.USAGE
    where = display_path(project.root)
    print(
        f"created project {where}: describe the work in {where}/{CONTEXT_FILE}, list the files "
        f"that matter in {where}/{FILEPATHS_FILE}, then run conclave from {where}"
    )
    return ExitCode.OK
