"""RunWorkspaces: the run's working directory as the coordinator, the agents and the result
see it: every agent's :class:`~actors.workspace.grants.AgentWorkspace`, the published answer
snapshots, and the deliverable in ``final/``.

Owned by the run (made by :mod:`actors.run.services`), so it survives restarts of the
actors that use it.
"""

from __future__ import annotations

from pathlib import Path

import trio

from conclave.actors.workspace.grants import AgentWorkspace
from conclave.actors.workspace.layout import RunLayout, copy_tree
from conclave.config.schema.context import ContextPath

__all__ = ["RunWorkspaces"]


class RunWorkspaces:
    def __init__(
        self,
        *,
        layout: RunLayout,
        agents: list[str],
        context_paths: tuple[ContextPath, ...],
        excluded: tuple[Path, ...],
        writes_open: bool,
    ) -> None:
        self.layout = layout
        self.excluded = excluded
        """The run's own directories that a context path may hold (its log, its root)."""
        self.writes_open = writes_open
        """Whether writable context paths are writable from the start (single mode)."""
        self.published: dict[str, Path] = {}
        """Label → snapshot, for every accepted answer whose workspace was staged."""
        self.final: Path | None = None
        """``final/`` once the deliverable is saved there."""
        self.agents = {
            agent: AgentWorkspace(
                agent=agent,
                layout=layout,
                context_paths=context_paths,
                excluded=excluded,
                published=self.published,
                writes_open=writes_open,
            )
            for agent in agents
        }

    def own_dirs(self) -> tuple[Path, ...]:
        """The run's directories that no tool but its own machinery may see: its log, its
        root, the live workspaces and the staged copies."""
        layout = self.layout
        return tuple(dict.fromkeys((*self.excluded, layout.workspaces, layout.staging_root)))

    def publish(self, agent: str, label: str) -> Path | None:
        """Make ``agent``'s staged copy the snapshot of its accepted answer ``label``, before
        anyone is told about the answer. Synchronous (one rename): the coordinator calls it
        between accepting the answer and telling the bus."""
        path = self.layout.publish(agent, label)
        if path is not None:
            self.published[label] = path
        return path

    async def save_final(self, source: Path) -> Path:
        """Copy ``source`` (the presenter's workspace, or the chosen answer's snapshot) to
        ``final/``, in a worker thread, replacing an earlier copy whole."""
        target = self.layout.final
        await trio.to_thread.run_sync(copy_tree, source, target)
        self.final = target
        return target
