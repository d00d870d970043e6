"""write_atomically replaces a file whole or not at all, synced before it is renamed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conclave.config.atomic_file import temporary_name, write_atomically

_KILLED_BEFORE_RENAME = """
import os, sys
from pathlib import Path
from conclave.config.atomic_file import temporary_name, write_atomically

os.replace = lambda *args, **kwargs: os._exit(9)
write_atomically(Path(sys.argv[1]), "new")
"""


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    """A directory of its own: the config specs' tmp_path holds their working directory."""
    made = tmp_path / "files"
    made.mkdir()
    return made


def test_the_file_holds_the_new_text(directory: Path) -> None:
    target = directory / "state.json"
    target.write_text("old", encoding="utf-8")

    write_atomically(target, "néw")

    assert target.read_text(encoding="utf-8") == "néw"
    assert sorted(p.name for p in directory.iterdir()) == ["state.json"]


def test_bytes_are_written_as_they_are(directory: Path) -> None:
    target = directory / "blob"

    write_atomically(target, b"\x00\xff")

    assert target.read_bytes() == b"\x00\xff"


def test_a_new_file_has_the_permissions_the_umask_gives(directory: Path) -> None:
    target = directory / "report.html"
    umask = os.umask(0o027)
    try:
        write_atomically(target, "page")
    finally:
        os.umask(umask)

    assert target.stat().st_mode & 0o777 == 0o640


def test_the_data_is_synced_before_it_is_renamed_into_place(
    directory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        calls.append("fsync")
        real_fsync(fd)

    def replace(source: str | Path, target: str | Path) -> None:
        calls.append("replace")
        real_replace(source, target)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)

    write_atomically(directory / "state.json", "new")

    assert calls[:2] == ["fsync", "replace"]


def test_a_failure_before_the_rename_leaves_the_old_file_whole_and_no_temporary(
    directory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = directory / "state.json"
    target.write_text("old", encoding="utf-8")

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)

    with pytest.raises(OSError, match="No space left"):
        write_atomically(target, "new")

    assert target.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in directory.iterdir()) == ["state.json"]


def test_a_process_killed_between_write_and_rename_leaves_the_old_file_whole(
    directory: Path,
) -> None:
    target = directory / "state.json"
    target.write_text("old", encoding="utf-8")

    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_BEFORE_RENAME, str(target)], check=False, timeout=60
    )

    assert killed.returncode == 9
    assert target.read_text(encoding="utf-8") == "old"
    # A kill runs no clean-up: the complete temporary stays, under a hidden name no reader opens.
    leftovers = [p for p in directory.iterdir() if p != target]
    assert [p.read_text(encoding="utf-8") for p in leftovers] == ["new"]
    assert all(p.name.startswith(".state.json.") and p.suffix == ".tmp" for p in leftovers)


def test_a_file_whose_name_is_as_long_as_the_file_system_allows_is_written(
    directory: Path,
) -> None:
    target = directory / ("r" * 250 + ".html")  # 255 characters: the most most systems allow

    write_atomically(target, "report")

    assert target.read_text(encoding="utf-8") == "report"
    assert sorted(p.name for p in directory.iterdir()) == [target.name]


def test_the_temporary_name_of_a_long_name_keeps_its_start_and_fits(directory: Path) -> None:
    name = "r" * 250 + ".html"

    temporary = temporary_name(name, directory)

    assert len(temporary) == os.pathconf(directory, "PC_NAME_MAX")
    assert temporary.startswith(".rrrr") and temporary.endswith(".tmp")
    assert temporary != temporary_name(name, directory)


def test_the_temporary_name_is_cut_by_whole_characters(directory: Path) -> None:
    name = "é" * 127  # 254 bytes in UTF-8

    temporary = temporary_name(name, directory)

    assert len(os.fsencode(temporary)) <= 255
    assert temporary.startswith("." + "é" * 116 + ".")  # 232 bytes of it, none split


def test_a_short_name_is_kept_whole_in_its_temporary_name(directory: Path) -> None:
    assert temporary_name("state.json", directory).startswith(".state.json.")
