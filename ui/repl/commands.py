"""Slash commands, and the completer for them and for agent ids.

Each command is a function of the REPL and its argument; :data:`COMMANDS` lists them in the
order ``/help`` shows. Unknown commands and bad arguments say what was wrong and what is
valid; nothing here raises.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import attrs
from prompt_toolkit.completion import CompleteEvent, Completer, Completion, PathCompleter
from prompt_toolkit.document import Document

from conclave.config.modes import AgentMode, CollaborationMode
from conclave.config.schema.permissions import PermissionMode
from conclave.ui.repl.protocol import ClearHistory, Correct, SetPermissionMode
from conclave.ui.repl.session_commands import compact_command, resume_command
from conclave.ui.repl.state import BUSY, Dialog, ReplState

if TYPE_CHECKING:
    from conclave.ui.repl.app import Repl

__all__ = ["COMMANDS", "SlashCompleter", "invalid_mode", "parse_mode", "run_command"]


def invalid_mode(text: str) -> str:
    valid = ", ".join(mode.value for mode in CollaborationMode)
    return f'invalid mode "{text}". Valid modes: {valid}'


def parse_mode(text: str) -> CollaborationMode:
    """``default``, ``plan`` or ``execute``; anything else raises ``ValueError`` with the
    message ``/mode`` and ``--mode`` print."""
    try:
        return CollaborationMode(text.strip().lower())
    except ValueError:
        raise ValueError(invalid_mode(text)) from None


@attrs.frozen(kw_only=True)
class SlashCommand:
    name: str
    usage: str
    help: str
    run: Callable[[Repl, str], None]


def _mode(repl: Repl, argument: str) -> None:
    state = repl.state
    if not argument:
        if state.running:
            state.tell(BUSY)
            return
        repl.open_dialog(
            Dialog.MODE_PICKER, selected=list(CollaborationMode).index(state.collaboration)
        )
        return
    try:
        mode = parse_mode(argument)
    except ValueError as exc:
        repl.error(str(exc))
        return
    refused = repl.mode_switch.switch(mode)
    if refused is not None:
        state.tell(refused)
    elif state.dialog is not Dialog.CONFIRM_MODE:
        repl.say(f"collaboration mode: {mode.value}")


def _agents(repl: Repl, argument: str) -> None:
    state = repl.state
    if argument:
        if argument not in state.agents:
            repl.error(f'no agent "{argument}"; configured agents: {_listed(state.agents)}')
            return
        if state.modes.agent_mode is not AgentMode.SINGLE:
            refused = state.toggle_agent_mode()
            if refused is not None:
                state.tell(refused)
                return
        refused = state.select_agent(argument)
        if refused is not None:
            state.tell(refused)
            return
        repl.say(f"single-agent mode: {argument} answers the next turn")
        return
    single = state.modes.agent_mode is AgentMode.SINGLE
    lines = [f"{len(state.agents):,} agents, {'single' if single else 'multi'}-agent mode:"]
    for agent in state.agents[:50]:
        mark = " (active)" if single and agent == state.active_agent else ""
        lines.append(f"  {agent}{mark}")
    if len(state.agents) > 50:
        lines.append(f"  … and {len(state.agents) - 50:,} more")
    repl.say("\n".join(lines))


def _listed(agents: Iterable[str]) -> str:
    agents = list(agents)
    shown = ", ".join(agents[:10])
    return shown + (f" and {len(agents) - 10:,} more" if len(agents) > 10 else "")


def _status(repl: Repl, argument: str) -> None:
    state = repl.state
    modes = state.modes
    agent = f"single ({state.active_agent})" if modes.agent_mode is AgentMode.SINGLE else "multi"
    running = state.status if state.running else "idle"
    lines = [
        f"run: {running}",
        f"collaboration mode: {state.collaboration.value}",
        f"agents: {agent}; refinement {'on' if modes.refinement else 'off'}",
        f"conversation: {len(state.history)} turn(s)",
        f"session: {state.session_id or 'none yet (one starts at the first turn)'}",
    ]
    if state.queued:
        lines.append(f"queued: {len(state.queued)} turn(s)")
    if state.last_log_dir is not None:
        lines.append(f"last log: {state.last_log_dir}")
    repl.say("\n".join(lines))


def _cost(repl: Repl, argument: str) -> None:
    usage = repl.state.usage
    if usage.cost_usd is None:
        cost = "unknown (some calls had no price, or no usage)"
    else:
        cost = f"${usage.cost_usd:.4f}"
    if usage.input_tokens is None or usage.output_tokens is None:
        tokens = "unknown (a server reported no usage)"
    else:
        tokens = f"{usage.input_tokens:,} in / {usage.output_tokens:,} out"
    repl.say(f"{usage.runs} run(s), {usage.llm_calls:,} LLM calls, tokens {tokens}, cost {cost}")


def _log(repl: Repl, argument: str) -> None:
    log_dir = repl.state.last_log_dir
    if log_dir is None:
        repl.say("no run has kept a log yet")
        return
    repl.say(f"{log_dir}  (conclave replay {log_dir / 'events.jsonl'})")


def _clear(repl: Repl, argument: str) -> None:
    repl.state.transcript.clear()
    repl.send(ClearHistory())
    repl.clear_screen()
    repl.say("new conversation: earlier turns are forgotten")


def _correct(repl: Repl, argument: str) -> None:
    """``/correct [@ID] TEXT``: a correction for the running run's PAOR agents."""
    agent: str | None = None
    text = argument.strip()
    if text.startswith("@"):
        agent, _, text = text[1:].partition(" ")
        text = text.strip()
    if not text or agent == "":
        repl.say("usage: /correct [@ID] TEXT  (e.g. /correct @worker search only in src/utils)")
        return
    repl.send(Correct(text=text, agent=agent))


def _help(repl: Repl, argument: str) -> None:
    lines = ["commands:"]
    lines += [f"  {command.usage:<16} {command.help}" for command in COMMANDS]
    lines += [
        "keys:",
        "  Enter            send (while a run executes: queued; with PAOR agents: a correction)",
        "  Alt+Enter        new line (also Ctrl+J, or \\ at the end of a line)",
        "  Shift+Tab        plan mode on/off",
        "  Alt+A / Alt+R    single/multi agent; refinement on/off",
        "  Alt+Left/Right   choose the active agent (single-agent mode); Alt+1..9 too",
        "  Ctrl+O           after the vote: choose who presents (Enter keeps the winner)",
        "  Ctrl+C           cancel the run (or a ! command); at an idle prompt, clear the line",
        "  Esc              close a dialog; at an idle prompt, clear the line (never cancels)",
        "  Ctrl+C twice     at an empty idle prompt: quit",
        "  Ctrl+R           search the input history (Enter takes the line found)",
        "  Ctrl+D           cancel any run and quit (so do /quit, /exit, and exit or quit alone)",
        "in a line:",
        "  @FILE            attach the file's text to the task (Tab completes the path)",
        "  !COMMAND         run a shell command; its output goes with your next message",
    ]
    repl.say("\n".join(lines))


def _answers(repl: Repl, argument: str) -> None:
    """The current (or last) run's answers: one line each, or one in full."""
    view = repl.state.view
    answers = view.answers if view is not None else []
    if not answers:
        repl.say("no answers yet: they appear here once agents answer")
        return
    if argument:
        found = [a for a in answers if argument in (a.label, a.agent)]
        if not found:
            labels = ", ".join(a.label for a in answers[-10:])
            repl.error(f'no answer "{argument}"; answers (latest): {labels}')
            return
        answer = found[-1]
        from conclave.ui.repl.render import markdown  # loaded with the runtime, after start-up

        title = ("class:user", f"answer {answer.label} by {answer.agent}:\n")
        repl.print([title, *markdown(answer.content), ("", "\n")])
        return
    lines = [f"{len(answers):,} answers (/answers LABEL shows one in full):"]
    for answer in answers[-20:]:
        first = " ".join(answer.content.split())[:80]
        lines.append(f"  {answer.label} ({answer.agent}): {first}")
    repl.say("\n".join(lines))


def _permissions(repl: Repl, argument: str) -> None:
    """Show the permission mode, or set the next runs' (not the running one's: a run's config
    is fixed when it starts)."""
    state = repl.state
    names = ", ".join(mode.value for mode in PermissionMode)
    if not argument:
        repl.say(f"permission mode: {state.permission_mode.value} (/permissions MODE: {names})")
        return
    try:
        mode = PermissionMode(argument.strip())
    except ValueError:
        repl.error(f'invalid permission mode "{argument.strip()}". Valid modes: {names}')
        return
    if state.running:
        state.tell(BUSY)
        return
    if state.interactive:
        repl.error(
            "the interactive agent's permission mode is set when the REPL starts: "
            "start it again with --permission-mode"
        )
        return
    state.permission_mode = mode
    repl.send(SetPermissionMode(mode=mode))
    repl.say(f"permission mode: {mode.value}")


def _quit(repl: Repl, argument: str) -> None:
    repl.quit()


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand(
        name="mode",
        usage="/mode [MODE]",
        help="pick or set the collaboration mode: default, plan, execute",
        run=_mode,
    ),
    SlashCommand(
        name="agents",
        usage="/agents [ID]",
        help="list the agents; with an id, run only that agent (single-agent mode)",
        run=_agents,
    ),
    SlashCommand(
        name="status", usage="/status", help="modes, the run, the conversation", run=_status
    ),
    SlashCommand(
        name="answers",
        usage="/answers [LABEL]",
        help="the run's answers; with a label (agent1.2) or an agent id, one in full",
        run=_answers,
    ),
    SlashCommand(name="cost", usage="/cost", help="tokens and cost so far", run=_cost),
    SlashCommand(name="log", usage="/log", help="the last run's log directory", run=_log),
    SlashCommand(
        name="clear",
        usage="/clear",
        help="clear the screen and start a new conversation",
        run=_clear,
    ),
    SlashCommand(
        name="resume",
        usage="/resume [ID]",
        help="go on with another session of this directory (without ID: pick one)",
        run=resume_command,
    ),
    SlashCommand(
        name="compact",
        usage="/compact [TEXT]",
        help="summarise older turns to shorten prompts; TEXT: what the summary keeps",
        run=compact_command,
    ),
    SlashCommand(
        name="correct",
        usage="/correct [@ID] TEXT",
        help="correct the running run's PAOR agents (or agent ID); the next plan follows it",
        run=_correct,
    ),
    SlashCommand(
        name="permissions",
        usage="/permissions [MODE]",
        help="show or set what tool calls ask: ask, accept-edits, bypass",
        run=_permissions,
    ),
    SlashCommand(name="help", usage="/help", help="commands and keys", run=_help),
    SlashCommand(name="quit", usage="/quit", help="cancel any run and quit", run=_quit),
    SlashCommand(name="exit", usage="/exit", help="as /quit", run=_quit),
)
_BY_NAME = {command.name: command for command in COMMANDS}


def run_command(repl: Repl, line: str) -> None:
    """Carry out ``line`` (it starts with ``/``)."""
    name, _, argument = line.strip()[1:].partition(" ")
    command = _BY_NAME.get(name.lower())
    if command is None:
        known = ", ".join(f"/{c.name}" for c in COMMANDS)
        repl.error(f'unknown command "/{name}"; commands: {known} (/help explains them)')
        return
    command.run(repl, argument.strip())


class SlashCompleter(Completer):
    """Command names after ``/``; modes after ``/mode`` and ``/permissions``; agent ids after
    ``/agents``; paths
    after ``@`` anywhere in a line (``@file`` attaches the file)."""

    def __init__(self, state: ReplState) -> None:
        self.state = state
        self._paths = PathCompleter(expanduser=True)

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        text = document.text_before_cursor
        word = document.get_word_before_cursor(WORD=True)
        if word.startswith("@") and (len(text) == len(word) or text[-len(word) - 1].isspace()):
            path = word[1:]
            yield from self._paths.get_completions(Document(path, len(path)), complete_event)
            return
        if not text.startswith("/") or "\n" in text:
            return
        name, space, argument = text[1:].partition(" ")
        if not space:
            for command in COMMANDS:
                if command.name.startswith(name.lower()):
                    yield Completion(
                        "/" + command.name,
                        start_position=-len(text),
                        display_meta=command.help,
                    )
            return
        if name in ("mode", "permissions"):
            values = CollaborationMode if name == "mode" else PermissionMode
            for value in (mode.value for mode in values):
                if value.startswith(argument):
                    yield Completion(value, start_position=-len(argument))
        elif name == "answers" and self.state.view is not None:
            labels = [a.label for a in self.state.view.answers]
            for label in labels[-100:]:
                if label.startswith(argument):
                    yield Completion(label, start_position=-len(argument))
        elif name == "agents":
            shown = 0
            for agent in self.state.agents:
                if agent.startswith(argument):
                    yield Completion(agent, start_position=-len(argument))
                    shown += 1
                    if shown == 100:
                        return
