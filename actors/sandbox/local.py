"""The ``local`` sandbox: commands run on the host, in the workspace, in their own process
group, with the environment the ``sandbox.env`` policy gives, less the run's own secrets by
value (:mod:`actors.sandbox.environment`), and the ``sandbox`` limits
(:mod:`actors.sandbox.limits`); inside bubblewrap where it is installed.

bubblewrap shows a command only what it needs (:mod:`actors.sandbox.bwrap`): the system
directories read-only, its workspace writable, the context paths (read-only unless writable
now), the answer snapshots read-only, a private /tmp, no network (unless ``sandbox.network``)
and its own pid namespace, so everything a command starts dies with it. The home directory
and the rest of the host are not there, unless a context path shows part of them; the run's
own directories inside a context path (the event log's, the other agents' live workspaces)
are covered by empty read-only directories. Without bubblewrap a command could read and
write anywhere the user can: the run says so as it starts, and ``refusal()`` refuses
``run_shell`` while any read-only mount exists, a promise only bubblewrap can keep.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
from pathlib import Path

import trio

from conclave.actors.sandbox.bwrap import Confinement, bwrap_argv
from conclave.actors.sandbox.env_policy import policy_environment
from conclave.actors.sandbox.environment import without_secrets
from conclave.actors.sandbox.limits import limit_prefix, own_user_namespace
from conclave.actors.sandbox.output import CappedOutput
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


async def _wait(child: subprocess.Popen[bytes]) -> int:
    """``child``'s exit status, waited for without blocking the loop: a pidfd where Linux
    has them, else a worker thread (abandoned on cancellation; the caller kills the
    child, and the thread then returns)."""
    if child.returncode is not None:
        return child.returncode
    if not hasattr(os, "pidfd_open"):
        return await trio.to_thread.run_sync(child.wait, abandon_on_cancel=True)
    pidfd = os.pidfd_open(child.pid)
    try:
        await trio.lowlevel.wait_readable(pidfd)
    finally:
        os.close(pidfd)
    return child.wait()


async def _read(stdout: trio.abc.ReceiveStream, output: CappedOutput) -> None:
    async for chunk in stdout:
        output.add(chunk)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # the whole group had already exited
        os.killpg(pgid, signal.SIGKILL)


class LocalSandbox:
    """Runs each command as ``sh -c`` in a new session (so a new process group), killed
    whole on timeout, on cancellation and when the shell exits: nothing a command starts
    outlives its call (without bubblewrap, a process that calls ``setsid`` can)."""

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
        """Takes effect at the next command: each runs in a fresh bubblewrap."""
        self._mounts = mounts

    async def aclose(self) -> None:
        """Nothing to release: each command's processes end with its call."""
        self._closed = True

    def argv(self, command: str, *, cwd: Path) -> list[str]:
        """What is executed for ``command``: ``sh -c`` under the limits, inside bubblewrap
        when confined."""
        # The command's own shell sets the limits, inside bubblewrap: a process limit set
        # before its user namespace exists would count all of the user's processes.
        limits = limit_prefix(self._config, own_user_namespace=own_user_namespace(self.confined))
        shell = ["sh", "-c", limits + command]
        if self._bwrap is None:
            return shell
        return bwrap_argv(self._bwrap, self.confinement(cwd), shell)

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
        try:
            # Started from this thread, not a worker thread as trio.lowlevel.open_process
            # would: bubblewrap's --die-with-parent follows the thread that forked it, and an
            # idle worker thread exits after 10 s, which would kill the command with it.
            child = subprocess.Popen(  # noqa: ASYNC220 (a fork, not a wait: see above)
                self.argv(command, cwd=cwd),
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
            # As the docker sandbox's ``cd`` reports it: the shell's "cannot execute".
            return ShellOutcome(
                exit_code=126,
                output=f"sh: cd: {cwd}: {exc.strerror}\n",
                timed_out=False,
                duration=trio.current_time() - started,
            )
        assert child.stdout is not None
        stdout = trio.lowlevel.FdStream(os.dup(child.stdout.fileno()))
        child.stdout.close()
        exit_code: int | None = None
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_read, stdout, output)
                with trio.move_on_after(timeout):
                    status = await _wait(child)
                    # As a shell reports it: a command killed by signal N is 128 + N.
                    exit_code = status if status >= 0 else 128 - status
                # The shell is done or out of time: kill what it left behind, so every writer
                # of the pipe is gone and the reader meets its end. Only a process that left
                # the group (possible without bubblewrap) could hold the pipe open: bounded.
                _kill_group(child.pid)
                nursery.cancel_scope.deadline = trio.current_time() + _DRAIN_S
        finally:
            _kill_group(child.pid)
            with trio.CancelScope(shield=True):
                with trio.move_on_after(_REAP_S):
                    await _wait(child)
                await stdout.aclose()
        return ShellOutcome(
            exit_code=exit_code,
            output=output.text(),
            timed_out=exit_code is None,
            duration=trio.current_time() - started,
            truncated_bytes=output.truncated,
        )
