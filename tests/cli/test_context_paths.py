"""Context paths: ``orchestrator.context_paths`` and ``--context PATH[:w]``, what they accept
and refuse before a run starts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from config.loader import ConfigError, parse_config
from config.schema.context import ContextPath, ContextPermission, parse_context_flag
from tests.cli.helpers import TASK
from ui.cli import main
from ui.exit_codes import ExitCode


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
