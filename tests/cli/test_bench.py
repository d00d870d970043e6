"""``conclave bench`` refuses unwritable destinations before measuring anything."""

from __future__ import annotations

from pathlib import Path

from tests.cli.helpers import conclave


def test_an_unwritable_log_root_is_refused_at_once_with_exit_code_2(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")

    done = conclave("bench", "--quick", "--log-root", str(blocker / "logs"), cwd=tmp_path)

    assert done.returncode == 2
    assert "--log-root" in done.stderr and "choose a writable one" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""  # nothing was measured


def test_an_unwritable_json_report_path_is_refused_at_once_with_exit_code_2(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")

    done = conclave("bench", "--quick", "--json", str(blocker / "out.json"), cwd=tmp_path)

    assert done.returncode == 2
    assert "--json" in done.stderr
    assert not (tmp_path / ".conclave").exists()  # checked before any log directory is made
