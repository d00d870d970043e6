"""write_file, edit_file and delete_file: what they change, and the diff the model sees."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from conclave.actors.tools.executor import AgentTools, ToolLimits
from tests.tools.conftest import MakeTools
from tests.tools.helpers import call

# write_file


async def test_write_file_creates_a_file_and_shows_a_diff(
    tools: AgentTools, workspace: Path
) -> None:
    result = await call(tools, "write_file", path="a.txt", content="one\ntwo\n")
    assert (workspace / "a.txt").read_text() == "one\ntwo\n"
    assert result.output == (
        "Created a.txt (8 bytes)\n--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1,2 @@\n+one\n+two"
    )


async def test_write_file_replaces_a_file_and_diffs_the_change(
    tools: AgentTools, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("one\ntwo\n")
    result = await call(tools, "write_file", path="a.txt", content="one\nTWO\n")
    assert result.output.splitlines()[0] == "Updated a.txt (8 bytes)"
    assert "-two\n+TWO" in result.output


async def test_write_file_creates_missing_directories(tools: AgentTools, workspace: Path) -> None:
    await call(tools, "write_file", path="a/b/c.txt", content="x")
    assert (workspace / "a" / "b" / "c.txt").read_text() == "x"


async def test_write_file_keeps_the_permissions_of_a_file_it_replaces(
    tools: AgentTools, workspace: Path
) -> None:
    script = workspace / "run.sh"
    script.write_text("echo old\n")
    script.chmod(0o750)
    await call(tools, "write_file", path="run.sh", content="echo new\n")
    assert stat.S_IMODE(script.stat().st_mode) == 0o750


async def test_write_file_leaves_no_temporary_file(tools: AgentTools, workspace: Path) -> None:
    await call(tools, "write_file", path="a.txt", content="x")
    assert os.listdir(workspace) == ["a.txt"]


async def test_write_file_reports_the_path_written(tools: AgentTools, workspace: Path) -> None:
    result = await call(tools, "write_file", path="a.txt", content="abc")
    assert result.metadata.paths_written == (workspace / "a.txt",)
    assert result.metadata.bytes == 3


async def test_a_long_diff_is_cut_to_its_line_cap(make_tools: MakeTools, workspace: Path) -> None:
    tools = make_tools(limits=ToolLimits(diff_max_lines=4))
    result = await call(tools, "write_file", path="a.txt", content="x\n" * 10)
    assert result.output.splitlines()[-1] == "[diff truncated: 9 more lines]"


async def test_a_file_over_the_diff_cap_is_written_without_a_diff(
    make_tools: MakeTools, workspace: Path
) -> None:
    tools = make_tools(limits=ToolLimits(diff_max_bytes=10))
    result = await call(tools, "write_file", path="a.txt", content="x" * 20)
    assert (workspace / "a.txt").read_text() == "x" * 20
    assert result.output.endswith("(no diff: the file is too large to show one)")


async def test_write_file_onto_a_directory_is_an_error(tools: AgentTools, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    result = await call(tools, "write_file", path="sub", content="x")
    assert not result.ok
    assert (workspace / "sub").is_dir()


# edit_file


async def test_edit_file_replaces_the_one_occurrence(tools: AgentTools, workspace: Path) -> None:
    (workspace / "a.py").write_text("x = 1\ny = 2\n")
    result = await call(tools, "edit_file", path="a.py", old="y = 2", new="y = 3")
    assert (workspace / "a.py").read_text() == "x = 1\ny = 3\n"
    assert result.output.splitlines()[0] == "Edited a.py (1 occurrence replaced)"
    assert "-y = 2\n+y = 3" in result.output


async def test_edit_file_with_absent_text_is_an_error(tools: AgentTools, workspace: Path) -> None:
    (workspace / "a.py").write_text("x = 1\n")
    result = await call(tools, "edit_file", path="a.py", old="z = 9", new="z = 0")
    assert not result.ok
    assert "the text to replace was not found in a.py" in (result.error or "")
    assert (workspace / "a.py").read_text() == "x = 1\n"


async def test_edit_file_with_several_matches_gives_the_count(
    tools: AgentTools, workspace: Path
) -> None:
    (workspace / "a.py").write_text("x\nx\nx\n")
    result = await call(tools, "edit_file", path="a.py", old="x", new="y")
    assert not result.ok
    assert "occurs 3 times in a.py" in (result.error or "")
    assert "replace_all=true" in (result.error or "")
    assert (workspace / "a.py").read_text() == "x\nx\nx\n"


async def test_edit_file_replace_all_replaces_every_match(
    tools: AgentTools, workspace: Path
) -> None:
    (workspace / "a.py").write_text("x\nx\nx\n")
    result = await call(tools, "edit_file", path="a.py", old="x", new="y", replace_all=True)
    assert (workspace / "a.py").read_text() == "y\ny\ny\n"
    assert "3 occurrences replaced" in result.output


async def test_edit_file_with_identical_texts_is_an_error(
    tools: AgentTools, workspace: Path
) -> None:
    (workspace / "a.py").write_text("x\n")
    result = await call(tools, "edit_file", path="a.py", old="x", new="x")
    assert not result.ok
    assert "the same text" in (result.error or "")


async def test_edit_file_keeps_windows_line_endings(tools: AgentTools, workspace: Path) -> None:
    (workspace / "a.txt").write_bytes(b"one\r\ntwo\r\n")
    await call(tools, "edit_file", path="a.txt", old="two", new="2")
    assert (workspace / "a.txt").read_bytes() == b"one\r\n2\r\n"


async def test_edit_file_refuses_a_binary_file(tools: AgentTools, workspace: Path) -> None:
    (workspace / "a.bin").write_bytes(b"ab\x00cd")
    result = await call(tools, "edit_file", path="a.bin", old="ab", new="xy")
    assert not result.ok
    assert "binary file" in (result.error or "")


async def test_edit_file_refuses_a_file_over_its_cap(
    make_tools: MakeTools, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("x" * 20)
    tools = make_tools(limits=ToolLimits(diff_max_bytes=10))
    result = await call(tools, "edit_file", path="a.txt", old="x", new="y", replace_all=True)
    assert not result.ok
    assert "too large to edit" in (result.error or "")


async def test_edit_file_of_a_missing_file_is_an_error(tools: AgentTools) -> None:
    result = await call(tools, "edit_file", path="nope.py", old="a", new="b")
    assert not result.ok
    assert "No such file" in (result.error or "")


# delete_file


async def test_delete_file_removes_the_file(tools: AgentTools, workspace: Path) -> None:
    (workspace / "a.txt").write_text("abc")
    result = await call(tools, "delete_file", path="a.txt")
    assert result.output == "Deleted a.txt (3 bytes)"
    assert result.metadata.paths_written == (workspace / "a.txt",)
    assert not (workspace / "a.txt").exists()


async def test_delete_file_refuses_a_directory(tools: AgentTools, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    result = await call(tools, "delete_file", path="sub")
    assert not result.ok
    assert "is a directory" in (result.error or "")
    assert (workspace / "sub").is_dir()


async def test_delete_file_of_a_missing_file_is_an_error(tools: AgentTools) -> None:
    result = await call(tools, "delete_file", path="nope.txt")
    assert not result.ok
    assert "No such file" in (result.error or "")
