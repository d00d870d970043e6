"""The interactive agent in the REPL, end to end on scripted agents: a question answered
directly, a run launched after the approval dialog (Edit, then Approve), a plan planned then
executed, a cancelled run the agent talks about, and the interactive state on screen."""

from __future__ import annotations

from pathlib import Path

import pytest

from conclave.actors.interactive.project import init_project
from conclave.config.schema import ConclaveConfig
from conclave.config.schema.interactive import InteractiveModeConfig
from conclave.ui.repl.layout import ProgressBlock, mode_bar
from conclave.ui.repl.render import fragments_text
from conclave.ui.repl.state import Dialog
from tests.repl.harness import CTRL_C, ENTER, ESC, Session, config, play


def _interactive(**settings: object) -> ConclaveConfig:
    return config(interactive_mode=InteractiveModeConfig(**settings))  # type: ignore[arg-type]


async def _replied(session: Session, text: str) -> None:
    await session.until(lambda: text in session.transcript(), f"the reply {text!r}")
    await session.until(lambda: not session.state.running, "the turn's end")


async def _dialog(session: Session) -> None:
    await session.until(
        lambda: session.state.dialog is Dialog.RUN_APPROVAL, "the run approval dialog"
    )


def test_the_mode_bar_shows_the_interactive_indicator(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        await session.until(lambda: session.state.interactive, "the interactive flag")
        assert fragments_text(session.render(mode_bar)).startswith("[interactive]")

    play(scenario, tmp_path, conclave=_interactive())


def test_without_the_section_turns_run_directly(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        result = await session.result_of("How many agents?")
        assert result.final_answer is not None
        assert not session.state.interactive

    play(scenario, tmp_path)


def test_a_short_question_is_answered_by_the_agent_without_a_run(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("Which agents are here?")
        await _replied(session, "No run needed: 3 agents are configured")
        assert session.state.usage.runs == 0

    play(scenario, tmp_path, conclave=_interactive())


def test_edit_then_approve_launches_the_edited_task(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("Write a limerick about trio")
        await _dialog(session)
        pending = session.state.pending_approval
        assert pending is not None and pending.task == "Write a limerick about trio"
        assert pending.agents == ("agent-1", "agent-2", "agent-3")
        session.press("2")  # Edit: the field holds the task
        await session.settle()
        session.press("\x15", "Write a sonnet about trio", ENTER)  # Ctrl+U clears the line
        await session.settle()
        session.press("1")  # Approve
        await _replied(session, "ended completed")
        assert session.state.usage.runs == 1
        assert session.state.pending_approval is None
        text = session.transcript()
        assert "run approved with the edited task: Write a sonnet about trio" in text
        assert "On “Write a sonnet about trio”" in text

    play(scenario, tmp_path, conclave=_interactive())


def test_cancel_returns_a_cancelled_result_and_the_agent_goes_on(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("Write a limerick about trio")
        await _dialog(session)
        session.press(ESC)
        await _replied(session, "The run was not launched")
        assert session.state.usage.runs == 0
        session.type("Still there?")
        await _replied(session, "No run needed for “Still there?”")

    play(scenario, tmp_path, conclave=_interactive())


def test_while_the_run_approval_dialog_is_open_the_live_line_says_it_waits_for_you(
    tmp_path: Path,
) -> None:
    heads: list[str] = []

    async def scenario(session: Session) -> None:
        session.type("Write a limerick about trio")
        await _dialog(session)
        heads.append(fragments_text(session.render(ProgressBlock())))
        session.press(ESC)
        await _replied(session, "The run was not launched")

    play(scenario, tmp_path, conclave=_interactive())
    assert heads == ["Thinking · waiting for your approval\n"]


def test_plan_then_execute_runs_two_runs_after_one_approval(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("Plan and then build a todo CLI")
        await _dialog(session)
        session.press(ENTER)  # Approve
        await _replied(session, "Planned, then executed the plan")
        assert session.state.usage.runs == 2
        assert len(list(session.log_root.glob("*/plans/plan-v1.json"))) == 1

    play(scenario, tmp_path, conclave=_interactive())


def test_without_approval_the_run_starts_at_once(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("Write a limerick about trio")
        await _replied(session, "ended completed")
        assert session.state.usage.runs == 1

    play(scenario, tmp_path, conclave=_interactive(require_approval=False))


def test_ctrl_c_during_a_launched_run_cancels_it_and_the_agent_says_so(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("Write a limerick about trio")
        await session.until(lambda: session.state.run_id is not None, "the launched run")
        session.press(CTRL_C)
        await _replied(session, "ended cancelled")
        assert session.state.run_id is None

    slow = config(latency=5.0, interactive_mode=InteractiveModeConfig(require_approval=False))
    play(scenario, tmp_path, conclave=slow)


def test_a_direct_turn_in_a_project_is_linked_under_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = init_project(tmp_path / "atlas")
    monkeypatch.chdir(project.root)

    async def scenario(session: Session) -> None:
        await session.result_of("A task")

    state = play(scenario, tmp_path)
    assert state.last_log_dir is not None
    assert (project.runs / state.last_log_dir.name).is_symlink()


def test_the_agents_prompt_says_where_the_user_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    prompts: list[str] = []

    async def scenario(session: Session) -> None:
        await session.until(lambda: session.state.interactive, "the interactive flag")
        flow = session.repl.approvals
        assert flow is not None and flow.session is not None
        prompts.append(flow.session.system_prompt)

    play(scenario, tmp_path, conclave=_interactive())
    [prompt] = prompts
    assert "You have no file or shell tools yourself" in prompt
    assert f"\n{tmp_path}\n" in prompt


def test_clear_starts_the_agent_on_a_new_conversation(tmp_path: Path) -> None:
    async def scenario(session: Session) -> None:
        session.type("Which agents are here?")
        await _replied(session, "No run needed: 3 agents")
        session.type("/clear")
        await session.settle()
        session.type("What did I ask before?")
        await _replied(session, "No run needed: earlier you asked nothing yet.")

    play(scenario, tmp_path, conclave=_interactive())
