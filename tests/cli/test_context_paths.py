"""Context paths: ``orchestrator.context_paths`` and ``--context PATH[:w]``, what they accept
and refuse before a run starts."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from conclave.actors.run.result import RunResult, Termination, Writes
from conclave.config.loader import ConfigError, parse_config
from conclave.config.resolver import RunFlags, UsageError, resolve
from conclave.config.schema.context import ContextPath, ContextPermission, parse_context_flag
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from conclave.ui.summary import writes_footer
from tests.cli.helpers import TASK, write_config


def _config(*context_paths: dict[str, object]) -> dict[str, object]:
    return {"agents": [{"id": "a"}], "orchestrator": {"context_paths": list(context_paths)}}


def test_a_context_path_from_the_config_is_resolved_and_read_only_by_default(
    tmp_path: Path,
) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")

    config = parse_config(_config({"path": str(tmp_path / "link")}))

    (context,) = config.orchestrator.context_paths
    assert context.path == (tmp_path / "real").resolve()
    assert context.permission is ContextPermission.READ
    assert config.orchestrator.agents_have_tools


def test_a_context_path_that_does_not_exist_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"context path '.*missing' does not exist"):
        parse_config(_config({"path": str(tmp_path / "missing")}))


def test_a_writable_context_path_this_user_cannot_write_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Asked of the operating system (root may write anywhere, so a chmod cannot stand in).
    monkeypatch.setattr(os, "access", lambda path, mode: mode != os.W_OK)

    with pytest.raises(ConfigError, match="has permission write but this user cannot write"):
        parse_config(_config({"path": str(tmp_path), "permission": "write"}))

    assert parse_config(_config({"path": str(tmp_path)})).orchestrator.context_paths


def test_a_permission_other_than_read_or_write_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="permission 'rw' is not one of: read, write"):
        parse_config(_config({"path": str(tmp_path), "permission": "rw"}))


def test_protected_paths_are_taken_from_their_context_path(tmp_path: Path) -> None:
    config = parse_config(
        _config({"path": str(tmp_path), "permission": "write", "protected_paths": ["keep"]})
    )

    assert config.orchestrator.context_paths[0].protected == ((tmp_path / "keep").resolve(),)


def test_a_protected_path_outside_its_context_path_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ctx").mkdir()
    with pytest.raises(ConfigError, match="is not inside its context path"):
        parse_config(_config({"path": str(tmp_path / "ctx"), "protected_paths": [str(tmp_path)]}))


def test_the_context_flag_is_read_only_and_with_w_writable(tmp_path: Path) -> None:
    assert parse_context_flag(str(tmp_path)).permission is ContextPermission.READ
    assert parse_context_flag(f"{tmp_path}:w").permission is ContextPermission.WRITE
    assert parse_context_flag(f"{tmp_path}:w").path == tmp_path.resolve()


def test_a_context_flag_naming_a_missing_path_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--context", f"{tmp_path / 'missing'}:w", TASK])

    assert code == ExitCode.USAGE
    assert "--context: context path" in capsys.readouterr().err


@pytest.mark.parametrize("root", ["/", "/:w", "/tmp/..", "//"])
def test_a_context_flag_granting_the_filesystem_root_is_a_usage_error(
    root: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--context", root, TASK])

    assert code == ExitCode.USAGE
    assert "--context: context path '/' is the whole filesystem root" in capsys.readouterr().err


def test_a_configured_context_path_at_the_filesystem_root_is_refused() -> None:
    with pytest.raises(ConfigError, match="'/' is the whole filesystem root"):
        parse_config(_config({"path": "/"}))


def test_a_context_flag_with_a_suffix_other_than_w_names_the_two_forms(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="':rw' is not a permission; write PATH for read-only"):
        parse_context_flag(f"{tmp_path}:rw")


def test_a_path_given_by_two_context_flags_with_both_permissions_is_refused(
    tmp_path: Path,
) -> None:
    with pytest.raises(UsageError, match="is given both read-only and writable; give it once"):
        resolve(RunFlags(context=(f"{tmp_path}:w", str(tmp_path))))


def test_a_context_flag_sets_the_permission_of_a_configured_path_keeping_its_protection(
    tmp_path: Path,
) -> None:
    (tmp_path / "docs").mkdir()
    config = tmp_path / "c.yaml"
    entry: dict[str, object] = {"path": str(tmp_path / "docs"), "protected_paths": ["keep.md"]}
    config.write_text(json.dumps(_config(entry)), encoding="utf-8")

    resolved = resolve(RunFlags(config=str(config), context=(f"{tmp_path / 'docs'}:w",)))

    (context,) = resolved.base.orchestrator.context_paths
    assert context.permission is ContextPermission.WRITE
    assert context.protected == ((tmp_path / "docs" / "keep.md").resolve(),)


def test_no_context_paths_and_no_tools_switch_means_no_tools() -> None:
    config = parse_config({"agents": [{"id": "a"}]})

    assert config.orchestrator.context_paths == ()
    assert not config.orchestrator.agents_have_tools


def test_the_tools_switch_gives_tools_without_context_paths() -> None:
    config = parse_config({"agents": [{"id": "a"}], "orchestrator": {"tools": True}})

    assert config.orchestrator.agents_have_tools


def test_a_context_path_built_in_code_is_checked_too(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        ContextPath(path=tmp_path / "missing")


# -- runs from the CLI: the footer and the writes in each case of the modes table ------------


def _step(tool: str, **arguments: str) -> dict[str, object]:
    return {"tool": tool, "arguments": arguments}


def _run_config(
    tmp_path: Path,
    *,
    agents: int = 2,
    round_steps: list[dict[str, object]] | None = None,
    present_steps: list[dict[str, object]] | None = None,
    **orchestrator: object,
) -> Path:
    """Scripted agents that write into the context path ``tmp_path/ctx`` in their rounds
    (``round_steps``) or their presentation (``present_steps``, by default one new file)."""
    ctx = tmp_path / "ctx"
    if present_steps is None:
        present_steps = [_step("write_file", path=f"{ctx}/made-by-{{me}}.txt", content="x")]
    backend = {
        "latency": 0,
        "tool_steps": round_steps or [],
        "presentation_tool_steps": present_steps,
    }
    members = [{"id": f"a{i}", "seed": i, **backend} for i in range(1, agents + 1)]
    return write_config(tmp_path / "conclave.yaml", members, **orchestrator)


@pytest.fixture
def ctx(tmp_path: Path) -> Path:
    path = tmp_path / "ctx"
    path.mkdir()
    (path / "existing.txt").write_text("before\n")
    return path


def _conclave(tmp_path: Path, config: Path, *flags: str) -> tuple[int, str, str]:
    """Run ``conclave run`` in-process; (exit code, stdout, stderr)."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    log = tmp_path / f"log{len(list(tmp_path.glob('log*')))}"
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["run", "--config", str(config), "--log-dir", str(log), *flags, TASK])
    return code, out.getvalue(), err.getvalue()


def _stream(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def _heading(tmp_path: Path, run: int = 0) -> str:
    """The footer's first line, naming the run's diff file."""
    diff = tmp_path / f"log{run}" / "context_path_writes.diff"
    return f"Files changed in context paths; the diff is in {diff}:"


def _presented(lines: list[dict[str, Any]]) -> bool:
    """Whether a presentation call was made (one LLM call per tool step, then its text)."""
    return any(e["type"] == "llm_request_started" and e["purpose"] == "present" for e in lines)


def test_multi_agent_refinement_on_presents_with_write_access_and_shows_the_footer(
    tmp_path: Path, ctx: Path
) -> None:
    code, out, err = _conclave(tmp_path, _run_config(tmp_path), "--context", f"{ctx}:w")

    assert code == ExitCode.OK, err
    (made,) = ctx.glob("made-by-*.txt")
    assert f"{_heading(tmp_path)}\n  new       {made}\n" in err
    assert str(made) not in out


def test_in_text_mode_stdout_is_the_bare_answer(tmp_path: Path, ctx: Path) -> None:
    config = _run_config(tmp_path)
    _, json_out, _ = _conclave(tmp_path, config, "--context", f"{ctx}:w", "--output-format", "json")
    for made in ctx.glob("made-by-*.txt"):
        made.unlink()

    _, out, _ = _conclave(tmp_path, config, "--context", f"{ctx}:w")

    assert out == json.loads(json_out)["final_answer"] + "\n"


def test_the_json_result_holds_the_writes(tmp_path: Path, ctx: Path) -> None:
    touch = _step("write_file", path=f"{ctx}/existing.txt", content="after\n")
    config = _run_config(
        tmp_path, present_steps=[_step("write_file", path=f"{ctx}/new.txt", content="x"), touch]
    )

    code, out, err = _conclave(tmp_path, config, "--context", f"{ctx}:w", "--output-format", "json")

    assert code == ExitCode.OK, err
    assert json.loads(out)["writes"] == {
        "files": [
            {"path": str(ctx / "existing.txt"), "kind": "modified", "renamed_from": None},
            {"path": str(ctx / "new.txt"), "kind": "new", "renamed_from": None},
        ]
    }


def test_a_run_that_only_deletes_a_users_file_says_so_and_saves_its_diff(
    tmp_path: Path, ctx: Path
) -> None:
    config = _run_config(tmp_path, present_steps=[_step("delete_file", path=f"{ctx}/existing.txt")])

    code, _, err = _conclave(tmp_path, config, "--context", f"{ctx}:w")

    assert code == ExitCode.OK, err
    assert f"{_heading(tmp_path)}\n  deleted   {ctx / 'existing.txt'}\n" in err
    shown = str(ctx / "existing.txt").lstrip("/")
    assert (tmp_path / "log0" / "context_path_writes.diff").read_text() == (
        f"--- a/{shown}\n+++ /dev/null\n@@ -1 +0,0 @@\n-before\n"
    )


def test_replay_ends_with_the_footer_of_the_files_the_run_changed(
    tmp_path: Path, ctx: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _run_config(tmp_path, present_steps=[_step("delete_file", path=f"{ctx}/existing.txt")])
    code, _, err = _conclave(tmp_path, config, "--context", f"{ctx}:w")
    assert code == ExitCode.OK, err
    footer = err[err.index(_heading(tmp_path)) :].split("\ncompleted:")[0]

    assert main(["replay", str(tmp_path / "log0")]) == ExitCode.OK

    assert capsys.readouterr().out.endswith(f"\n\n{footer}\n")


def test_a_file_context_path_is_written_by_the_file_tools(tmp_path: Path, ctx: Path) -> None:
    notes = ctx / "existing.txt"
    config = _run_config(
        tmp_path, present_steps=[_step("edit_file", path=str(notes), old="before", new="after")]
    )

    code, _, err = _conclave(tmp_path, config, "--context", f"{notes}:w")

    assert code == ExitCode.OK, err
    assert notes.read_text() == "after\n"
    assert f"  modified  {notes}\n" in err


def test_nothing_written_shows_no_footer(tmp_path: Path, ctx: Path) -> None:
    config = _run_config(tmp_path, present_steps=[])

    code, _, err = _conclave(tmp_path, config, "--context", f"{ctx}:w")

    assert code == ExitCode.OK, err
    assert "changed in context paths" not in err


def test_more_than_five_files_are_counted_and_listed_in_the_log_dir(
    tmp_path: Path, ctx: Path
) -> None:
    steps = [_step("write_file", path=f"{ctx}/f{i}.txt", content="x") for i in range(6)]

    code, _, err = _conclave(
        tmp_path, _run_config(tmp_path, present_steps=steps), "--context", f"{ctx}:w"
    )

    assert code == ExitCode.OK, err
    listing = tmp_path / "log0" / "context_path_writes.txt"
    diff = tmp_path / "log0" / "context_path_writes.diff"
    assert (
        f"6 files changed in context paths (6 new); the full list is in {listing}; "
        f"the diff is in {diff}"
    ) in err
    assert listing.read_text().splitlines() == [f"new\t{ctx / f'f{i}.txt'}" for i in range(6)]


def test_a_round_cannot_write_a_context_path_during_coordination(tmp_path: Path, ctx: Path) -> None:
    early = _step("write_file", path=f"{ctx}/early.txt", content="too soon")
    config = _run_config(tmp_path, round_steps=[early], present_steps=[])

    code, out, err = _conclave(
        tmp_path, config, "--context", f"{ctx}:w", "--output-format", "stream-json"
    )

    assert code == ExitCode.OK, err
    assert not (ctx / "early.txt").exists()
    refused = [e for e in _stream(out) if e["type"] == "tool_call_finished"]
    assert refused and all(not e["ok"] and "read-only" in e["error"] for e in refused)


def test_single_agent_refinement_off_writes_during_coordination_without_a_presentation(
    tmp_path: Path, ctx: Path
) -> None:
    work = _step("write_file", path=f"{ctx}/by-the-agent.txt", content="x")
    config = _run_config(tmp_path, round_steps=[work])
    flags = ("--agent-mode", "single", "--refinement", "off", "--context", f"{ctx}:w")

    _, stream, _ = _conclave(tmp_path, config, *flags, "--output-format", "stream-json")
    (ctx / "by-the-agent.txt").unlink()
    code, _, err = _conclave(tmp_path, config, *flags)

    assert code == ExitCode.OK, err
    assert not _presented(_stream(stream))
    assert f"{_heading(tmp_path, run=1)}\n  new       {ctx / 'by-the-agent.txt'}\n" in err


def test_multi_agent_refinement_off_synthesizes_with_write_access(
    tmp_path: Path, ctx: Path
) -> None:
    flags = ("--refinement", "off", "--context", f"{ctx}:w")

    code, _, err = _conclave(tmp_path, _run_config(tmp_path), *flags)

    assert code == ExitCode.OK, err
    (made,) = ctx.glob("made-by-*.txt")
    assert f"{_heading(tmp_path)}\n  new       {made}\n" in err


def test_winner_reuse_with_writable_paths_presents_anyway_and_says_so(
    tmp_path: Path, ctx: Path
) -> None:
    flags: tuple[str, ...] = ("--refinement", "off", "--final-answer-strategy", "winner_reuse")
    flags += ("--context", f"{ctx}:w", "--output-format", "stream-json")

    code, out, err = _conclave(tmp_path, _run_config(tmp_path), *flags)

    assert code == ExitCode.OK, err
    lines = _stream(out)
    (said,) = [e for e in lines if e["type"] == "presenting_for_writes"]
    assert "writable context paths need someone to write them" in said["reason"]
    assert _presented(lines)
    result = lines[-1]
    assert [f["path"] for f in result["writes"]["files"]] == [
        str(p) for p in ctx.glob("made-by-*.txt")
    ]


def test_winner_reuse_without_writable_paths_uses_the_answer_without_a_presentation(
    tmp_path: Path, ctx: Path
) -> None:
    flags: tuple[str, ...] = ("--refinement", "off", "--final-answer-strategy", "winner_reuse")
    flags += ("--context", str(ctx), "--output-format", "stream-json")

    code, out, err = _conclave(tmp_path, _run_config(tmp_path), *flags)

    assert code == ExitCode.OK, err
    lines = _stream(out)
    assert not _presented(lines)
    assert not [e for e in lines if e["type"] == "presenting_for_writes"]
    assert lines[-1]["writes"] == {"files": []}


def test_synthesize_without_writable_paths_still_presents(tmp_path: Path, ctx: Path) -> None:
    flags = ("--refinement", "off", "--context", str(ctx), "--output-format", "stream-json")

    code, out, err = _conclave(tmp_path, _run_config(tmp_path), *flags)

    assert code == ExitCode.OK, err
    assert _presented(_stream(out))
    assert list(ctx.glob("made-by-*.txt")) == []  # read-only: the presentation's write refused


def test_with_refinement_on_the_baseline_is_taken_right_before_the_presentation(
    tmp_path: Path, ctx: Path
) -> None:
    code, _, err = _conclave(tmp_path, _run_config(tmp_path), "--context", f"{ctx}:w")

    assert code == ExitCode.OK, err
    kinds = [
        json.loads(line) for line in (tmp_path / "log0" / "events.jsonl").read_text().splitlines()
    ]
    tracked = next(i for i, e in enumerate(kinds) if e["kind"] == "context_writes_tracked")
    votes = [i for i, e in enumerate(kinds) if e["kind"] == "vote_added"]
    presenting = [
        i
        for i, e in enumerate(kinds)
        if e["kind"] == "llm_request_started" and e["purpose"] == "present"
    ]
    assert max(votes) < tracked < min(presenting)


def test_protected_paths_stay_read_only_in_the_presentation(tmp_path: Path, ctx: Path) -> None:
    (ctx / "keep").mkdir()
    (ctx / "keep" / "rules.txt").write_text("do not touch\n")
    steps = [
        _step("write_file", path=f"{ctx}/keep/rules.txt", content="touched"),
        _step("write_file", path=f"{ctx}/free.txt", content="x"),
    ]
    context = [{"path": str(ctx), "permission": "write", "protected_paths": ["keep"]}]
    config = _run_config(tmp_path, present_steps=steps, context_paths=context)

    code, out, err = _conclave(tmp_path, config, "--output-format", "stream-json")

    assert code == ExitCode.OK, err
    assert (ctx / "keep" / "rules.txt").read_text() == "do not touch\n"
    (refused,) = [e for e in _stream(out) if e["type"] == "tool_call_finished" and not e["ok"]]
    assert "protected" in refused["error"]
    assert _stream(out)[-1]["writes"] == {
        "files": [{"path": str(ctx / "free.txt"), "kind": "new", "renamed_from": None}]
    }


def test_the_text_summary_names_the_deliverable_workspace(tmp_path: Path, ctx: Path) -> None:
    code, _, err = _conclave(tmp_path, _run_config(tmp_path), "--context", f"{ctx}:w")

    assert code == ExitCode.OK, err
    assert f"; workspace {(tmp_path / 'log0' / 'final').resolve()}" in err


def test_presenting_anyway_for_writes_is_said_in_the_progress(tmp_path: Path, ctx: Path) -> None:
    flags = ("--refinement", "off", "--final-answer-strategy", "winner_reuse")

    code, _, err = _conclave(tmp_path, _run_config(tmp_path), *flags, "--context", f"{ctx}:w")

    assert code == ExitCode.OK, err
    assert "presents to write the context paths" in err
    assert "writable context paths need someone to write them" in err


def test_the_footer_names_no_list_file_that_is_not_there(tmp_path: Path) -> None:
    result = RunResult(
        final_answer="x",
        winner="a",
        presenter="a",
        strategy="winner_present",
        answers=[],
        votes={},
        rounds=1,
        llm_calls=1,
        restarts=0,
        termination=Termination.COMPLETED,
        failed_agents={},
        log_dir=str(tmp_path),
        duration_s=0.1,
        writes=Writes.of(new=[f"/ctx/f{i}" for i in range(6)]),
    )

    assert writes_footer(result) == "6 files changed in context paths (6 new)"


@pytest.mark.parametrize("value", ["", ":w", ":r", "  :w"])
def test_a_context_flag_with_an_empty_path_is_a_usage_error_not_the_current_directory(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # An unset shell variable (--context "$DIR:w") must not grant the working directory.
    code = main(["run", "--context", value, TASK])

    assert code == ExitCode.USAGE
    assert (
        "--context: the path is empty; pass a directory, such as ./src or ./src:w"
        in capsys.readouterr().err
    )


def test_a_batch_context_flag_with_an_empty_path_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "t1", "task": TASK}) + "\n", encoding="utf-8")

    results = tmp_path / "results.jsonl"

    code = main(["batch", str(tasks), "--out", str(results), "--context", ":w"])

    assert code == ExitCode.USAGE
    assert "--context: the path is empty" in capsys.readouterr().err
    assert not results.exists()


def test_a_context_flag_whose_name_is_too_long_is_a_usage_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--context", f"{'a' * 300}:w", TASK])

    assert code == ExitCode.USAGE
    assert (
        f"--context: context path {str(tmp_path / ('a' * 300))!r} cannot be used "
        "(File name too long); fix the path"
    ) in capsys.readouterr().err


def test_a_context_flag_in_a_symlink_loop_is_a_usage_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "loop").symlink_to("loop")

    code = main(["run", "--context", "loop/src", TASK])

    assert code == ExitCode.USAGE
    assert (
        f"--context: context path {str(tmp_path / 'loop' / 'src')!r} cannot be used "
        "(a symbolic link loop); fix the path"
    ) in capsys.readouterr().err


def test_a_configured_context_path_whose_name_is_too_long_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot be used \(File name too long\)"):
        parse_config(_config({"path": str(tmp_path / ("a" * 300))}))


def test_a_context_flag_naming_the_home_of_a_user_that_does_not_exist_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["run", "--context", "~no-such-user-here/src", TASK])

    assert code == ExitCode.USAGE
    assert (
        "--context: context path '~no-such-user-here/src': there is no home directory "
        "'~no-such-user-here'; fix the path"
    ) in capsys.readouterr().err


def test_a_protected_path_in_a_symlink_loop_is_refused(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to("loop")

    with pytest.raises(ConfigError, match=r"cannot be used \(a symbolic link loop\)"):
        parse_config(_config({"path": str(tmp_path), "protected_paths": ["loop/x"]}))
