"""A run's working directory: where agents work, what their answers leave, the deliverable.

::

    <workdir>/
      workspaces/<agent id>/   each agent's own working directory (its tools' cwd), writable
      snapshots/<label>/       an accepted answer's workspace, as it was when it was answered
      snapshots/.staging/<agent id>/   an answer's copy while the coordinator judges it
      final/                   the presenter's workspace once the final answer is made

A snapshot is taken in two steps so that copying never blocks the coordinator: the agent
copies its workspace to its staging directory (in a worker thread) before it submits an
answer, and the coordinator, when it accepts the answer, renames the copy to
``snapshots/<label>`` (one ``rename``: atomic, and fast enough for the event loop) before
anyone is told about the answer. Labels are the anonymous ``agentN.M``, so a snapshot's path
says no more about its author than the answer does.

Every copy is made into a temporary directory beside its destination and renamed into
place, so a destination is either absent or whole, even if the run is cancelled mid-copy.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

__all__ = ["RunLayout", "copy_tree"]

_STAGING = ".staging"


class RunLayout:
    """The paths of one run's working directory (made absolute and resolved)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.realpath(root))
        self.workspaces = self.root / "workspaces"
        self.snapshots = self.root / "snapshots"
        self.staging_root = self.snapshots / _STAGING
        self.final = self.root / "final"

    def create(self, agents: list[str]) -> None:
        """Make the directories, one workspace per agent (blocking: call it in a thread).
        A reused workdir keeps its workspaces (work goes on from them), but snapshots belong
        to one run's answers: an earlier run's are removed."""
        self.workspaces.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.snapshots, ignore_errors=True)
        self.staging_root.mkdir(parents=True)
        for agent in agents:
            self.workspace(agent).mkdir(exist_ok=True)

    def seed(self, paused: RunLayout, agents: list[str], labels: list[str]) -> dict[str, Path]:
        """Copy a paused run's workspaces of ``agents`` and snapshots of ``labels`` (those it
        has) into this one, made already (blocking: call it in a thread); returns the
        snapshots copied, by label. The paused run's directory is only read."""
        for agent in agents:
            if paused.workspace(agent).is_dir():
                copy_tree(paused.workspace(agent), self.workspace(agent))
        copied: dict[str, Path] = {}
        for label in labels:
            if paused.snapshot(label).is_dir():
                copy_tree(paused.snapshot(label), self.snapshot(label))
                copied[label] = self.snapshot(label)
        return copied

    def workspace(self, agent: str) -> Path:
        return self.workspaces / agent

    def staging(self, agent: str) -> Path:
        return self.staging_root / agent

    def snapshot(self, label: str) -> Path:
        return self.snapshots / label

    def stage(self, agent: str) -> None:
        """Copy ``agent``'s workspace to its staging directory, replacing an older copy
        (blocking: run it in a worker thread)."""
        copy_tree(self.workspace(agent), self.staging(agent))

    def publish(self, agent: str, label: str) -> Path | None:
        """Move ``agent``'s staged copy to ``snapshots/<label>``; ``None`` if nothing is
        staged (the agent has no workspace, or this answer was published already)."""
        staged, target = self.staging(agent), self.snapshot(label)
        try:
            os.rename(staged, target)
        except FileNotFoundError:
            return target if target.is_dir() else None
        return target


def copy_tree(source: Path, target: Path) -> None:
    """Make ``target`` a copy of the directory ``source`` (symlinks copied as links, never
    followed: a link in a workspace must not pull in what it points to). Blocking; the
    target is replaced whole, never left half-written."""
    partial = target.with_name(f".{target.name}.{uuid.uuid4().hex}.partial")
    shutil.copytree(source, partial, symlinks=True)
    old = target.with_name(f".{target.name}.{uuid.uuid4().hex}.old")
    try:
        os.rename(target, old)  # a directory cannot be renamed over a non-empty one
    except FileNotFoundError:
        os.rename(partial, target)
        return
    os.rename(partial, target)
    shutil.rmtree(old, ignore_errors=True)
