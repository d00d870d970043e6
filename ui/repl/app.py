"""``run_repl``: the REPL's application, with the trio runtime on a thread of its own.

prompt-toolkit owns the terminal and the asyncio loop on the main thread; the trio runtime
(the service: the pool, the hub, the runs) runs ``trio.run`` on a thread of its own. Why not
as asyncio's guest on one thread: a guest's trio tasks run between the UI's callbacks, so one
long step of a run (an injection bus fanning 200 answers out to 200 agents: 0.6 s of CPU,
up to 2 s on a loaded machine) froze key echo for that long. On its own thread the run is
preempted every few milliseconds (the interpreter's switch interval) and keys are echoed
meanwhile.

The UI sends the service commands through the trio token; the service hands every change of
the screen's state to the UI's thread (``loop.call_soon_threadsafe``), a run's progress as a
snapshot at most every 50 ms, and the application redraws at most every 50 ms however fast
changes arrive.

Start-up: the prompt is drawn first, with only prompt-toolkit and the config loaded; the
runtime (trio, the actors) is then imported in a worker thread, and its thread starts when
it is in. A line sent before then waits and is sent when the service is up.

Leaving: Ctrl+D, ``/quit``, SIGTERM or SIGHUP send :class:`~ui.repl.protocol.Quit`; the
service cancels any run, waits until its event log is closed, and ends; its end ends the
application.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prompt_toolkit.application import Application
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.formatted_text import FormattedText, StyleAndTextTuples
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.input import Input
from prompt_toolkit.layout import AnyContainer, DynamicContainer, HSplit
from prompt_toolkit.output import Output
from prompt_toolkit.renderer import print_formatted_text as render_formatted_text

from conclave.config.keys import check_interactive_key
from conclave.config.modes import CollaborationMode, ModeSource, ModeState
from conclave.config.problems import ConfigError
from conclave.config.resolver import ResolvedConfig, RunFlags, UsageError, resolve
from conclave.config.schema import AgentConfig
from conclave.config.schema.agents import price_of
from conclave.config.wording import plural
from conclave.ui.exit_codes import ExitCode
from conclave.ui.log_dir import resolve_log_root
from conclave.ui.repl.attachments import AttachError, attach, longest_backtick_run
from conclave.ui.repl.collector import idle_collection
from conclave.ui.repl.commands import SlashCompleter, run_command
from conclave.ui.repl.keys import build_keys
from conclave.ui.repl.layout import build_layout
from conclave.ui.repl.mode_switch import ModeSwitch, SwitchChoice
from conclave.ui.repl.protocol import Command, Continue, Override, Quit, Resume, Submit
from conclave.ui.repl.session_commands import SessionStart
from conclave.ui.repl.shell import ShellCommands
from conclave.ui.repl.state import Dialog, ReplState, model_of
from conclave.ui.repl.style import STYLE
from conclave.ui.session_flags import SESSIONS_ROOT
from conclave.ui.signals import signal_exit_code

if TYPE_CHECKING:
    import trio

    from conclave.actors.llm.protocol import LLMBackend
    from conclave.actors.session.compaction import CompactionPolicy
    from conclave.ui.repl.interactive import InteractiveFlow
    from conclave.ui.repl.planning import PlanFlow
    from conclave.ui.repl.questions import ReplQuestions
    from conclave.ui.repl.tool_approvals import ReplToolApprover

__all__ = ["Repl", "history_path", "repl_command", "run_repl", "run_session"]

QUIT_WINDOW = 2.0
"""Seconds within which a second Ctrl+C at an empty idle prompt quits."""
QUIT_WORDS = frozenset({"exit", "quit"})
"""Lines that quit when typed alone, as in the shells and agents people come from."""

REDRAW_INTERVAL = 0.05
"""The runtime's changes are drawn at most once per this many seconds: a thousand agents'
events cost 20 frames a second. Keys redraw at once (a typed character is echoed
without waiting for the next frame)."""

BackendFactory = Callable[[AgentConfig], "LLMBackend"]


def history_path() -> Path:
    """``$XDG_STATE_HOME/conclave/repl_history`` (default ``~/.local/state``)."""
    root = os.environ.get("XDG_STATE_HOME") or os.path.join(Path.home(), ".local", "state")
    return Path(root) / "conclave" / "repl_history"


def _open_history(path: Path | None) -> tuple[History, str]:
    """The persistent history, or one in memory and why (a read-only home)."""
    if path is None:
        return InMemoryHistory(), ""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)
    except OSError as exc:
        return InMemoryHistory(), (
            f"input history is not kept: cannot write {path} ({exc.strerror or exc}); "
            "set XDG_STATE_HOME to a writable directory"
        )
    return FileHistory(str(path)), ""


class Repl:
    """The UI side: the application, the input line, and what keys and commands do."""

    def __init__(
        self,
        state: ReplState,
        *,
        history: History | None = None,
        input: Input | None = None,
        output: Output | None = None,
    ) -> None:
        self.state = state
        self.buffer = Buffer(
            name="input",
            multiline=True,
            history=history or InMemoryHistory(),
            completer=SlashCompleter(state),
            complete_while_typing=True,
        )
        self.buffer.on_text_changed += self._typed
        self.plan_container: AnyContainer | None = None
        """The plan approval dialog while it is open (:mod:`ui.repl.planning`)."""
        self.app: Application[None] = Application(
            layout=build_layout(self),
            key_bindings=build_keys(self),
            style=STYLE,
            include_default_pygments_style=False,
            mouse_support=True,
            full_screen=False,
            # Draw as soon as asked: postponing until the loop is idle waits behind the
            # runtime's work, which a big run never lets be idle.
            max_render_postpone_time=None,
            input=input,
            output=output,
        )
        self.app.ttimeoutlen = 0.05  # Esc alone is a key here: do not wait long for more
        self.app.after_render += self._drawn
        state.on_change = self.changed
        self._last_frame = 0.0
        self._redraw_due = False
        self._token: trio.lowlevel.TrioToken | None = None
        self._channel: trio.MemorySendChannel[Command] | None = None
        self._early: list[Command] = []
        self._pending: list[StyleAndTextTuples] = []
        self._flushing = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self.runtime_started = False
        self.quitting = False
        self._interrupted_at: float | None = None
        """When Ctrl+C last found an empty idle prompt (a second one soon after quits)."""
        self.shell = ShellCommands(self)
        """``!command``."""
        self.plans: PlanFlow | None = None
        self.questions: ReplQuestions | None = None
        """Agents' questions, each on a card in the input's place (:mod:`ui.repl.questions`)."""
        self.approvals: InteractiveFlow | None = None
        """The interactive agent's run approval (:mod:`ui.repl.interactive`), when on."""
        self.tool_approvals: ReplToolApprover | None = None
        """The tool approval card (:mod:`ui.repl.tool_approvals`)."""
        self.mode_switch = ModeSwitch(self)
        """Collaboration mode changes, confirmed when they stop work."""
        self.session_start: SessionStart | None = None
        """How this REPL's session began (``None``: it keeps none)."""
        self.compaction: CompactionPolicy | None = None
        """When the session is compacted (``None``: the defaults)."""

    # -- the trio side ----------------------------------------------------------------------

    def connect(
        self, token: trio.lowlevel.TrioToken, channel: trio.MemorySendChannel[Command]
    ) -> None:
        """The service is up: send what was sent before, then everything as it comes."""
        self._token, self._channel = token, channel
        early, self._early = self._early, []
        for command in early:
            self.send(command)
        self.state.on_change()

    @property
    def connected(self) -> bool:
        """Whether the service is up (commands sent before wait for it)."""
        return self._channel is not None

    def send(self, command: Command) -> None:
        """Hand ``command`` to the service (from any code on this thread)."""
        if self._token is None or self._channel is None:
            self._early.append(command)
            return
        self._token.run_sync_soon(self._channel.send_nowait, command)

    def on_runtime(self, call: Callable[[], None]) -> None:
        """Run ``call`` on the runtime's thread, after the commands sent before it (what the
        session records is written there only)."""
        if self._token is None:
            raise RuntimeError("the runtime is not connected")
        self._token.run_sync_soon(call)

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop the application runs on: redraws and prints are scheduled on it."""
        self._loop = loop

    # -- redraws -------------------------------------------------------------------------------

    def changed(self) -> None:
        """The state changed: draw it, at most once per :data:`REDRAW_INTERVAL`."""
        if self._redraw_due:
            return
        wait = self._last_frame + REDRAW_INTERVAL - time.monotonic()
        if wait <= 0 or self._loop is None:
            self.app.invalidate()
            return
        self._redraw_due = True
        self._loop.call_later(wait, self._redraw)

    def _redraw(self) -> None:
        self._redraw_due = False
        self.app.invalidate()

    def _drawn(self, _app: Application[None]) -> None:
        self._last_frame = time.monotonic()

    # -- output above the prompt ---------------------------------------------------------------

    def print(self, block: StyleAndTextTuples) -> None:
        """Print ``block`` into the scrollback above the application, after what is pending
        (written at the loop's next turn, with whatever else comes meanwhile)."""
        self.state.transcript.append(block)
        self._pending.append(block)
        if self._flushing or self._loop is None:
            return
        self._flushing = True
        self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        """Erase the application, write what is pending where it was, and draw it again
        below. Not prompt-toolkit's ``in_terminal``: that puts the terminal in cooked mode
        while it prints, and keys typed meanwhile were mangled by the terminal (Ctrl+D taken
        as end of file and lost, a line and Enter arriving as a pasted line and newline)."""
        self._flushing = False
        blocks, self._pending = self._pending, []
        app = self.app
        if not app.is_running:
            self._pending = blocks + self._pending  # written by write_pending
            return
        renderer = app.renderer
        renderer.erase()
        for block in blocks:
            self._write(block)
        renderer.reset()
        if not app.key_processor.input_queue:  # a position report can be read: ask for one
            renderer.request_absolute_cursor_position()
        app.invalidate()

    def write_pending(self) -> None:
        """Write what waits to be printed straight to the terminal: before the application's
        first frame and after its last, when there is no frame to print above."""
        blocks, self._pending = self._pending, []
        for block in blocks:
            self._write(block)

    def _write(self, block: StyleAndTextTuples) -> None:
        """Straight to the terminal: prompt-toolkit's ``print_formatted_text`` shortcut
        would print through ``run_in_terminal`` (cooked mode) while the application runs."""
        output = self.app.output
        render_formatted_text(output, FormattedText(block), STYLE)
        output.flush()

    def say(self, text: str) -> None:
        self.print([("", text.rstrip("\n") + "\n")])

    def error(self, text: str) -> None:
        self.print([("class:error", text.rstrip("\n") + "\n")])

    def clear_screen(self) -> None:
        self.app.renderer.clear()

    # -- what keys and commands do ---------------------------------------------------------------

    def toggle(self, change: Callable[[], str | None]) -> None:
        """Apply a toggle, or say why it was refused."""
        self.state.changing_by = ModeSource.SHORTCUT
        try:
            refused = change()
        finally:
            self.state.changing_by = ModeSource.COMMAND
        if refused:
            self.state.tell(refused)
        else:
            self.state.notice = ""
            self.state.on_change()

    def _typed(self, _buffer: Buffer) -> None:
        self.state.notice = ""
        self._interrupted_at = None

    def interrupt_idle(self) -> None:
        """Ctrl+C at an empty prompt with no run on screen: the second within
        :data:`QUIT_WINDOW` seconds quits; the first says so."""
        now = time.monotonic()
        if self._interrupted_at is not None and now - self._interrupted_at <= QUIT_WINDOW:
            self.quit()
            return
        self._interrupted_at = now
        self.state.tell("press Ctrl+C again to quit (or Ctrl+D)")

    def accept(self) -> None:
        """Enter: a line ending in ``\\`` continues on the next; an empty line continues
        with the vote's winner when the vote waits; ``exit`` or ``quit`` alone quits; a
        ``/`` line is a command; anything else is the next turn (queued while a run
        executes), or a correction while a run's PAOR agents work."""
        buffer, state = self.buffer, self.state
        text = buffer.text
        if text.endswith("\\"):
            buffer.text = text[:-1] + "\n"
            buffer.cursor_position = len(buffer.text)
            return
        if not text.strip():
            if state.override is not None:
                self.send(Continue())
            buffer.reset()
            return
        if text.startswith("!"):
            buffer.append_to_history()
            buffer.reset()
            self.shell.run(text[1:].strip())
            return
        if text.startswith("/") or text.strip().lower() in QUIT_WORDS:
            buffer.append_to_history()
            buffer.reset()
            if text.startswith("/"):
                run_command(self, text)
            else:
                self.quit()
            return
        try:
            attached = attach(text.strip(), Path.cwd())
        except AttachError as exc:
            self.state.tell(str(exc))  # the line stays in the input, to be corrected
            return
        buffer.append_to_history()
        buffer.reset()
        for name, size in attached.files:
            self.say(f"attached {name} ({size:,} bytes)")
        self.submit(attached.task, shown_task=text.strip() if attached.files else None, typed=True)

    def submit(self, task: str, **how: Any) -> None:
        """Send ``task`` as the next turn with the modes on the bar now, carrying the output
        of the ``!`` commands run since the last turn."""
        state = self.state
        if state.shell_context:
            outputs = "\n\n".join(state.shell_context)
            fence = "`" * max(3, longest_backtick_run(outputs) + 1)
            shown = how.get("shown_task") or task
            task = (
                f"Output of commands I ran in my shell, for context:\n{fence}\n{outputs}\n"
                f"{fence}\n\n{task}"
            )
            how["shown_task"] = shown
            state.shell_context = []
        self.send(Submit(task=task, modes=state.modes, **how))

    def open_override(self) -> None:
        window = self.state.override
        if window is None:
            self.state.tell("nothing to override: Ctrl+O works once the vote is complete")
            return
        self.open_dialog(Dialog.OVERRIDE)

    def open_dialog(self, dialog: Dialog, *, selected: int = 0) -> None:
        self.state.dialog = dialog
        self.state.selected = selected
        self.state.row_number = ""
        self.state.on_change()

    def close_dialog(self) -> None:
        if self.state.dialog is Dialog.CONFIRM_MODE:
            self.mode_switch.choose(SwitchChoice.KEEP)
            return
        if self.state.dialog is Dialog.TOOL_APPROVAL:
            if self.tool_approvals is not None:
                self.tool_approvals.deny()  # the card's own Deny closes it
            return
        if self.state.dialog is Dialog.QUESTION:
            if self.questions is not None:
                self.questions.take_default()  # the agent waits for an answer: the default
            return
        if self.state.dialog is Dialog.RUN_APPROVAL:
            if self.approvals is not None:
                self.approvals.cancel_dialog()  # the dialog's own Cancel closes it
            return
        if self.state.dialog is Dialog.PLAN:
            if self.plans is not None:
                self.plans.cancel()  # the dialog's own Cancel closes it
            return
        self.state.dialog = Dialog.NONE
        self.state.row_number = ""
        self.state.on_change()

    def _rows(self) -> int:
        state = self.state
        if state.dialog is Dialog.OVERRIDE:
            return len(state.override.rows) if state.override is not None else 0
        if state.dialog is Dialog.MODE_PICKER:
            return len(CollaborationMode)
        if state.dialog is Dialog.SESSIONS:
            return len(state.session_choices)
        return 0

    def move_selection(self, step: int, *, wrap: bool = True) -> None:
        """Move the highlight ``step`` rows; past either end it wraps round (arrows) or
        stops there (pages)."""
        rows = self._rows()
        if rows:
            moved = self.state.selected + step
            self.state.selected = moved % rows if wrap else min(max(moved, 0), rows - 1)
            self.state.row_number = ""
            self.state.on_change()

    def type_row_digit(self, digit: str) -> None:
        """A digit of a row's number: the row is chosen as soon as no longer number starts
        with the digits typed (at once with up to nine rows), and highlighted until then
        for Enter to choose. A number past the last row starts again from this digit."""
        state, rows = self.state, self._rows()
        typed = state.row_number + digit
        if int(typed) > rows:
            typed = digit
        number = int(typed)
        if not 1 <= number <= rows:
            state.row_number = ""
            state.tell(f"no row {typed}: the rows are numbered 1 to {rows}")
            return
        if number * 10 > rows:
            self.choose(number - 1)
            return
        state.row_number = typed
        state.selected = number - 1
        state.on_change()

    def choose(self, index: int) -> None:
        """Take row ``index`` of the open dialog."""
        state = self.state
        if not 0 <= index < self._rows():
            return
        dialog = state.dialog
        state.dialog = Dialog.NONE
        state.row_number = ""
        if dialog is Dialog.OVERRIDE and state.override is not None:
            row = state.override.rows[index]
            self.send(Override(agent=row.agent))
            state.tell(f"{row.agent} presents the final answer ({row.label})")
        elif dialog is Dialog.MODE_PICKER:
            mode = list(CollaborationMode)[index]
            refused = state.set_collaboration(mode)
            state.tell(refused or f"collaboration mode: {mode.value}")
        elif dialog is Dialog.SESSIONS:
            self.send(Resume(session_id=state.session_choices[index].id))
        state.on_change()

    def extra_dialog(self) -> AnyContainer:
        return DynamicContainer(lambda: self.plan_container or HSplit([]))

    def quit(self) -> None:
        """Cancel any run, wait for its log to close, and leave."""
        if self.quitting:
            return
        self.quitting = True
        self.state.tell(
            "quitting: waiting for the run's log to close" if self.state.running else ""
        )
        if self.runtime_started:
            self.send(Quit())
        else:
            self.runtime_ended()

    # -- the runtime -------------------------------------------------------------------------------

    def runtime_ended(self) -> None:
        """The service has ended (after Quit, or by failing): the application ends too."""
        if self.app.is_running and self.app.future is not None and not self.app.future.done():
            self.app.exit()


async def _trio_main(
    repl: Repl,
    loop: asyncio.AbstractEventLoop,
    resolved: ResolvedConfig,
    log_root: Path | None,
    backend_factory: BackendFactory | None,
) -> None:
    """The runtime's thread: the service until it ends. It reaches the UI only through
    ``loop.call_soon_threadsafe``."""
    import trio

    from conclave.ui.repl.interactive import attach_interactive, compaction_policy
    from conclave.ui.repl.planning import attach_plans
    from conclave.ui.repl.questions import attach_questions
    from conclave.ui.repl.service import open_repl_service
    from conclave.ui.repl.sessions import open_repl_session
    from conclave.ui.repl.tool_approvals import attach_tool_approvals

    def post(change: Callable[[], None]) -> None:
        loop.call_soon_threadsafe(change)

    def printer(block: StyleAndTextTuples) -> None:
        loop.call_soon_threadsafe(repl.print, block)

    send, receive = trio.open_memory_channel[Command](math.inf)
    async with open_repl_service(
        resolved=resolved,
        state=repl.state,
        post=post,
        printer=printer,
        log_root=log_root,
        backend_factory=backend_factory,
    ) as service:
        attach_plans(repl, service)
        attach_tool_approvals(repl, service)
        attach_questions(repl, service)
        async with contextlib.AsyncExitStack() as stack:
            if repl.session_start is not None:
                stack.enter_context(
                    open_repl_session(
                        service,
                        printer=printer,
                        start=repl.session_start,
                        policy=repl.compaction or compaction_policy(resolved.base),
                    )
                )
            await attach_interactive(repl, service)
            token = trio.lowlevel.current_trio_token()
            post(lambda: repl.connect(token, send))
            await service.serve(receive)


def _load_runtime() -> None:
    """What the runtime's thread needs, imported off the UI thread so the prompt answers meanwhile;
    then the collector is tuned for actors, as ``conclave`` does for other commands."""
    for module in (
        "trio",
        "outcome",
        "conclave.ui.repl.service",
        "conclave.ui.repl.planning",
        "conclave.ui.repl.questions",
        "conclave.ui.repl.interactive",
        "conclave.ui.repl.sessions",
        "conclave.ui.repl.render",
    ):
        importlib.import_module(module)
    from conclave.runtime.gc_tuning import tune_gc_for_actors

    tune_gc_for_actors()


async def run_session(
    repl: Repl,
    *,
    resolved: ResolvedConfig,
    log_root: Path | None,
    backend_factory: BackendFactory | None = None,
    welcome: str = "",
) -> None:
    """Run the application and the runtime's thread until the person leaves; returns once
    the runtime has ended (any run's log closed). Raises what the runtime raised."""
    loop = asyncio.get_running_loop()
    repl.bind(loop)
    repl.state.models = {agent.id: model_of(agent) for agent in resolved.base.agents}
    repl.state.priced = any(price_of(agent) is not None for agent in resolved.base.agents)
    repl.state.permission_mode = resolved.base.permissions.mode
    finished: asyncio.Future[Any] = loop.create_future()

    def runtime_done(outcome: Any) -> None:
        finished.set_result(outcome)
        repl.runtime_ended()

    def runtime_thread() -> None:
        import outcome
        import trio

        ended = outcome.capture(
            trio.run, _trio_main, repl, loop, resolved, log_root, backend_factory
        )
        loop.call_soon_threadsafe(runtime_done, ended)

    async def start_runtime() -> None:
        await asyncio.to_thread(_load_runtime)
        collection.freeze()
        if repl.quitting:  # left while the runtime loaded: no runtime to end
            if not finished.done():
                finished.set_result(None)
            return
        repl.runtime_started = True
        # A daemon: should the UI fail, the process must still be able to exit.
        threading.Thread(target=runtime_thread, name="conclave-runtime", daemon=True).start()

    def first_frame(app: Application[None]) -> None:
        # Loaded once the prompt is on the screen: the import thread would otherwise take
        # the GIL from the first frame half of the time.
        app.after_render -= first_frame
        app.create_background_task(start_runtime())

    def pre_run() -> None:
        repl.app.after_render += first_frame

    if welcome:
        repl.say(welcome)
    repl.write_pending()
    with idle_collection(loop, busy=lambda: repl.state.running) as collection:
        repl.app.key_processor.before_key_press += lambda _processor: collection.key()
        await repl.app.run_async(pre_run=pre_run)
        if not finished.done():
            repl.quit()
            if not repl.runtime_started:
                finished.set_result(None)
        outcome = await finished
    if outcome is not None:
        outcome.unwrap()
    repl.write_pending()


def run_repl(
    resolved: ResolvedConfig,
    *,
    modes: ModeState | None = None,
    log_root: Path | None = Path(".conclave") / "runs",
    history: Path | None = None,
    welcome: str = "",
    session: SessionStart | None = None,
) -> int:
    """The REPL on this terminal until the person leaves; the exit code. Each turn's config
    is ``resolved`` finished for the modes on the bar then. With ``session``, the
    conversation is recorded (and resumed) as a session, whose id is said on leaving."""
    agents = tuple(a.id for a in resolved.base.agents)
    state = ReplState(agents=agents, modes=modes or ModeState())
    file_history, problem = _open_history(history)
    repl = Repl(state, history=file_history)
    repl.session_start = session
    if problem:
        repl.say(problem)
    stopped: list[int] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGHUP):

            def stop(signum: int = signum) -> None:
                stopped.append(signum)
                repl.quit()

            loop.add_signal_handler(signum, stop)
        await run_session(repl, resolved=resolved, log_root=log_root, welcome=welcome)

    asyncio.run(main())
    if state.session_id is not None:
        with contextlib.suppress(OSError, ValueError):
            print(
                f"session {state.session_id} (resume: conclave --resume {state.session_id}, "
                "or conclave -c for the latest)"
            )
    return signal_exit_code(stopped[0]) if stopped else ExitCode.OK


def repl_command(args: argparse.Namespace) -> int:
    """``conclave repl`` (and a bare ``conclave`` in a terminal, or one with run flags and
    no task): the flags resolved and checked as every front end's are, before the terminal
    is taken over."""
    flags = RunFlags.from_args(args)
    try:
        resolved = resolve(flags)
        flags = flags.with_config_mode(resolved.base)
        modes = flags.mode_state()
        resolved.for_flags(modes)  # the starting modes' run must be able to start
        check_interactive_key(resolved.base, source=resolved.source)
        session = _session_start(args, resolved, flags)
        log_root = resolve_log_root(args.log_dir)
    except (UsageError, ConfigError) as exc:
        print(f"conclave: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    if sys.stdin is None or not sys.stdin.isatty():
        print(
            "conclave repl: stdin is not a terminal, and the REPL needs one; to run one task "
            "from a pipe, use `echo TASK | conclave` or `conclave run TASK`",
            file=sys.stderr,
        )
        return ExitCode.USAGE
    talk = (
        "Talk with the interactive agent; it launches runs when needed"
        if resolved.base.orchestrator.interactive is not None
        else "Type a task and press Enter"
    )
    welcome = (
        f"Conclave: {plural(len(resolved.base.agents), 'agent')}, {resolved.where()}. "
        f"{talk}; /help lists keys and commands, Ctrl+D quits."
    )
    return run_repl(
        resolved,
        modes=modes,
        log_root=log_root,
        history=history_path(),
        welcome=welcome,
        session=session,
    )


def _session_start(
    args: argparse.Namespace, resolved: ResolvedConfig, flags: RunFlags
) -> SessionStart:
    """How the session begins. A session named on the command line must exist (checked
    now, so a wrong id is a usage error, not a REPL that starts without it)."""
    root = SESSIONS_ROOT
    resume: str | None = args.resume
    if args.continue_session or resume:
        from conclave.actors.session.store import SessionError
        from conclave.ui.sessions import chosen_session

        try:
            resume = chosen_session(root, args)
        except SessionError as exc:
            raise UsageError(str(exc)) from None
    mode_from_config = not flags.collaboration_given and resolved.base.mode is not None
    return SessionStart(
        root=root,
        resume=resume,
        source=ModeSource.CONFIG if mode_from_config else ModeSource.FLAG,
        flags=flags,
    )
