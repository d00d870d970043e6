"""Which config file a run uses, when ``--config`` does not say.

In order: ``--config PATH``; ``./.conclave/config.yaml`` (the project's, in the directory the
command runs in); ``$XDG_CONFIG_HOME/conclave/config.yaml``, which is
``~/.config/conclave/config.yaml`` when ``XDG_CONFIG_HOME`` is unset (the user's); else no
file, and the run uses the scripted default (offline, no key needed). The first that exists
wins; files are never merged, so what a run used is one file the user can open.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from pathlib import Path

import attrs

__all__ = ["ConfigOrigin", "FoundConfig", "discover_config", "project_config", "user_config"]


class ConfigOrigin(enum.Enum):
    """Where the config a run uses came from."""

    FLAG = "--config"
    PROJECT = "this directory's .conclave/config.yaml"
    USER = "your user config"
    DEFAULT = "the scripted default"


@attrs.frozen(kw_only=True)
class FoundConfig:
    path: Path | None
    """``None``: no file; the scripted default."""
    origin: ConfigOrigin

    def describe(self) -> str:
        """One line for stderr: which file the run uses, and why that one."""
        if self.path is None:
            return "no config file found; using the scripted default"
        return f"using config {self.path} ({self.origin.value})"


def project_config(cwd: Path) -> Path:
    return cwd / ".conclave" / "config.yaml"


def user_config(environ: Mapping[str, str]) -> Path:
    base = environ.get("XDG_CONFIG_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path.home() / ".config"
    return root / "conclave" / "config.yaml"


def discover_config(
    given: str | os.PathLike[str] | None,
    *,
    cwd: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> FoundConfig:
    """The config file to use (see the module docstring). ``given`` (the ``--config`` value)
    is returned as it is, existing or not: the loader's message then names it."""
    if given is not None:
        return FoundConfig(path=Path(given), origin=ConfigOrigin.FLAG)
    project = project_config(Path.cwd() if cwd is None else cwd)
    if project.is_file():
        return FoundConfig(path=project, origin=ConfigOrigin.PROJECT)
    user = user_config(os.environ if environ is None else environ)
    if user.is_file():
        return FoundConfig(path=user, origin=ConfigOrigin.USER)
    return FoundConfig(path=None, origin=ConfigOrigin.DEFAULT)
