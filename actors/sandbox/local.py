"""The ``local`` sandbox: commands run on the host, in the workspace, in their own process
group, with the environment the ``sandbox.env`` policy gives, less the run's own secrets by
value (:mod:`actors.sandbox.environment`), and the ``sandbox`` limits
(:mod:`actors.sandbox.limits`); inside bubblewrap where it is installed.

bubblewrap shows a command only what it needs (:mod:`actors.sandbox.bwrap`): the system
directories read-only, its workspace writable, the context paths (read-only unless writable
now), the answer snapshots read-only, a private /tmp, no network (unless ``sandbox.network``)
and its own pid namespace. An agent's commands run in one long-lived bubblewrap
(:mod:`actors.sandbox.bwrap_session`), which kills everything a command started before its
call returns. The home directory
and the rest of the host are not there, unless a context path shows part of them; the run's
own directories inside a context path (the event log's, the other agents' live workspaces)
are covered by empty read-only directories. Without bubblewrap a command could read and
write anywhere the user can: the run says so as it starts, and ``refusal()`` refuses
``run_shell`` while any read-only mount exists, a promise only bubblewrap can keep.
"""

from __future__ import annotations

import errno
import functools
import os
import shutil
import stat
import subprocess
from collections.abc import Hashable
from pathlib import Path

import trio

from conclave.actors.sandbox.bwrap import Confinement, bwrap_argv
from conclave.actors.sandbox.bwrap_session import SESSION_SHELL, BwrapSession
from conclave.actors.sandbox.env_policy import policy_environment
from conclave.actors.sandbox.environment import without_secrets
from conclave.actors.sandbox.limits import limit_prefix, own_user_namespace
from conclave.actors.sandbox.output import CappedOutput
from conclave.actors.sandbox.process import kill_group, shell_status, wait_exit
from conclave.actors.sandbox.protocol import NO_RUN_DIRS, Mount, RunDirs, ShellOutcome
from conclave.config.run_secrets import NO_SECRETS, RunSecrets
from conclave.config.schema.sandbox import SandboxConfig

__all__ = ["BWRAP_HELP", "LocalSandbox", "bubblewrap"]

BWRAP_HELP = (
    "install bubblewrap (`apt-get install bubblewrap`, `dnf install bubblewrap`, "
    "`pacman -S bubblewrap`) so commands see only the system, their workspace and the "
    "context paths, or use orchestrator.sandbox.type: docker"
)

_DRAIN_S = 1.0
"""Seconds to wait for the output pipe to close once the group is killed. Only a process
that left the group (``setsid``) without bubblewrap can hold it open longer; its output past
this is not read."""
_REAP_S = 5.0
"""Seconds to wait for a SIGKILLed command to be reaped (the kernel does it at once)."""


@functools.cache
def bubblewrap() -> str | None:
    """The path of a bubblewrap that works here, or ``None``. Installed is not enough: in
    some containers user namespaces are off and bwrap fails, so it is tried once."""
    found = shutil.which("bwrap")
    if found is None:
        return None
    try:
        probe = subprocess.run(
            [found, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "true"],
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return found if probe.returncode == 0 else None


async def _read(stdout: trio.abc.ReceiveStream, output: CappedOutput) -> None:
    async for chunk in stdout:
        output.add(chunk)


def _cannot_enter(cwd: Path, reason: str, started: float) -> ShellOutcome:
    """As the docker sandbox's ``cd`` reports a directory it cannot enter: the shell's
    "cannot execute"."""
    return ShellOutcome(
        exit_code=126,
        output=f"sh: cd: {cwd}: {reason}\n",
        timed_out=False,
        duration=trio.current_time() - started,
    )


def _entry_error(cwd: Path) -> str | None:
    """Why a process could not start in ``cwd`` (as ``chdir`` would say), or ``None``."""
    try:
        if not stat.S_ISDIR(os.stat(cwd).st_mode):
            return os.strerror(errno.ENOTDIR)
    except OSError as exc:
        return exc.strerror
    return None if os.access(cwd, os.X_OK) else os.strerror(errno.EACCES)


def _identities(confinement: Confinement) -> tuple[tuple[int, int] | None, ...]:
    """Which directories the mounts and covers are (device, inode): a path replaced on the
    host since a sandbox was made is another directory than the one that sandbox shows."""
    found: list[tuple[int, int] | None] = []
    for path in [m.path for m in confinement.mounts] + list(confinement.covers):
        try:
            info = os.stat(path)
        except OSError:
            found.append(None)
        else:
            found.append((info.st_dev, info.st_ino))
    return tuple(found)


class LocalSandbox:
    """Runs each command as ``sh -c``, killed whole on timeout, on cancellation and when the
    shell exits: nothing a command starts outlives its call (without bubblewrap, a process
    that calls ``setsid`` can).

    Without bubblewrap each command runs in a new session (so a new process group). Under
    bubblewrap, commands run in a long-lived bubblewrap (:mod:`actors.sandbox.bwrap_session`),
    started at the first command and closed with the sandbox; a command that needs another
    confinement (after a remount, a run directory made since) gets a new one, and commands
    running at once get one each."""

    def __init__(
        self,
        *,
        workspace: Path,
        mounts: tuple[Mount, ...],
        config: SandboxConfig,
        run_dirs: RunDirs = NO_RUN_DIRS,
        use_bubblewrap: bool = True,
        secrets: RunSecrets = NO_SECRETS,
    ) -> None:
        self._workspace = workspace
        self._mounts = mounts
        self._run_dirs = run_dirs
        self._config = config
        self._bwrap = bubblewrap() if use_bubblewrap else None
        self._env = without_secrets(policy_environment(os.environ, config.env), secrets)
        if self._bwrap is not None:
            self._env["HOME"] = "/tmp"  # the real one is not there; /tmp is the command's own
        self._closed = False
        self._idle: list[BwrapSession] = []
        self._sessions: list[BwrapSession] = []
        """Every session alive: idle ones and ones running a command."""

    @property
    def confined(self) -> bool:
        """Whether commands run inside bubblewrap."""
        return self._bwrap is not None

    def refusal(self) -> str | None:
        if self._bwrap is not None:
            return None
        read_only = [str(m.path) for m in self._mounts if not m.writable]
        if not read_only:
            return None
        shown = ", ".join(read_only[:3]) + (
            f" and {len(read_only) - 3} more" if len(read_only) > 3 else ""
        )
        return (
            f"read-only paths ({shown}) must stay read-only, and without bubblewrap a shell "
            f"command could write to them; {BWRAP_HELP}"
        )

    async def remount(self, mounts: tuple[Mount, ...]) -> None:
        """Takes effect at the next command, which gets a bubblewrap showing ``mounts``."""
        self._mounts = mounts

    async def aclose(self) -> None:
        """Kill the bubblewraps (each a pid namespace: everything in it ends too) and reap
        them; shielded and bounded, so cancellation leaves nothing running."""
        self._closed = True
        self._idle.clear()
        while self._sessions:
            await self._discard(self._sessions[-1])

    async def _discard(self, session: BwrapSession) -> None:
        if session in self._sessions:  # aclose may have discarded it during its command
            self._sessions.remove(session)
        await session.aclose()

    def argv(self, command: str) -> list[str]:
        """What is executed for ``command``: ``sh -c`` under the limits (on the host, or in
        the bubblewrap session when confined)."""
        # The command's own shell sets the limits, inside bubblewrap: a process limit set
        # before its user namespace exists would count all of the user's processes.
        limits = limit_prefix(self._config, own_user_namespace=own_user_namespace(self.confined))
        return ["sh", "-c", limits + command]

    def confinement(self, cwd: Path) -> Confinement:
        """What a command started in ``cwd`` sees (checked at each command: a run directory
        made after the sandbox opened is covered too)."""
        mounts = [Mount(path=self._workspace, writable=True), *self._mounts]
        mounts += [Mount(path=p, writable=False) for p in self._run_dirs.shared if p.exists()]
        return Confinement(
            mounts=tuple(mounts),
            covers=self._run_dirs.hidden,
            cwd=cwd,
            network=self._config.network,
        )

    async def run_shell(self, command: str, *, cwd: Path, timeout: float) -> ShellOutcome:
        """Run ``command``; stdout and stderr share one pipe, so the output interleaves as the
        command wrote it. On timeout the group is killed and ``exit_code`` is ``None``; on
        cancellation the group is killed before ``Cancelled`` propagates."""
        if self._closed:
            raise RuntimeError("run_shell on a closed sandbox; open a new one with open_sandbox")
        refused = self.refusal()
        if refused is not None:
            raise PermissionError(f"run_shell is refused: {refused}")
        started = trio.current_time()
        output = CappedOutput(self._config.max_output_bytes)
        if self._bwrap is not None:
            return await self._run_in_session(command, cwd, timeout, output, started)
        try:
            child = subprocess.Popen(  # noqa: ASYNC220 (a fork, not a wait)
                self.argv(command),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=self._env,
                start_new_session=True,
            )
        except (FileNotFoundError, NotADirectoryError, PermissionError) as exc:
            if str(exc.filename) != str(cwd):
                raise
            return _cannot_enter(cwd, exc.strerror or "cannot enter", started)
        assert child.stdout is not None
        stdout = trio.lowlevel.FdStream(os.dup(child.stdout.fileno()))
        child.stdout.close()
        exit_code: int | None = None
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_read, stdout, output)
                with trio.move_on_after(timeout):
                    status = await wait_exit(child)
                    exit_code = shell_status(status)
                # The shell is done or out of time: kill what it left behind, so every writer
                # of the pipe is gone and the reader meets its end. Only a process that left
                # the group (possible without bubblewrap) could hold the pipe open: bounded.
                kill_group(child.pid)
                nursery.cancel_scope.deadline = trio.current_time() + _DRAIN_S
        finally:
            kill_group(child.pid)
            with trio.CancelScope(shield=True):
                with trio.move_on_after(_REAP_S):
                    await wait_exit(child)
                await stdout.aclose()
        return ShellOutcome(
            exit_code=exit_code,
            output=output.text(),
            timed_out=exit_code is None,
            duration=trio.current_time() - started,
            truncated_bytes=output.truncated,
        )

    async def _run_in_session(
        self, command: str, cwd: Path, timeout: float, output: CappedOutput, started: float
    ) -> ShellOutcome:
        """``run_shell`` under bubblewrap: in an idle session made as this command needs, or
        a new one. A session whose command timed out or was cancelled is killed whole."""
        reason = _entry_error(cwd)
        if reason is not None:
            return _cannot_enter(cwd, reason, started)
        assert self._bwrap is not None
        confinement = self.confinement(cwd)
        argv = bwrap_argv(self._bwrap, confinement, SESSION_SHELL)
        key = (tuple(argv), _identities(confinement))
        for stale in self._stale_sessions(key):
            await self._discard(stale)
        session = next((s for s in self._idle if s.key == key), None)
        if session is not None:
            self._idle.remove(session)
        else:
            try:
                session = BwrapSession.start(argv, cwd=cwd, env=self._env, key=key)
            except (FileNotFoundError, NotADirectoryError, PermissionError) as exc:
                if str(exc.filename) != str(cwd):
                    raise
                return _cannot_enter(cwd, exc.strerror or "cannot enter", started)
            self._sessions.append(session)
        exit_code: int | None = None
        reusable = False
        try:
            with trio.move_on_after(timeout):
                exit_code = await session.run(self.argv(command), cwd=cwd, output=output)
                reusable = session.usable
        finally:
            if reusable and not self._closed:
                self._idle.append(session)
            else:
                await self._discard(session)
        return ShellOutcome(
            exit_code=exit_code,
            output=output.text(),
            timed_out=exit_code is None,
            duration=trio.current_time() - started,
            truncated_bytes=output.truncated,
        )

    def _stale_sessions(self, key: Hashable) -> list[BwrapSession]:
        """The idle sessions no command will use again, taken out of the idle list: made
        otherwise than ``key`` says (a remount, a directory replaced or made since), or
        ended."""
        stale = [s for s in self._idle if s.key != key or not s.usable]
        self._idle = [s for s in self._idle if s not in stale]
        return stale
