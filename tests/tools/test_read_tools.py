"""read_file, list_directory, glob and search: what the model is shown, and the caps."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import trio

from conclave.actors.tools.executor import AgentTools, ToolLimits
from tests.tools.conftest import MakeTools
from tests.tools.helpers import call

# read_file


async def test_read_file_numbers_each_line(tools: AgentTools, workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha\nbeta\n")
    result = await call(tools, "read_file", path="a.txt")
    assert result.ok
    assert result.output == "     1\talpha\n     2\tbeta"


async def test_read_file_pages_with_offset_and_limit(tools: AgentTools, workspace: Path) -> None:
    (workspace / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    result = await call(tools, "read_file", path="a.txt", offset=4, limit=2)
    assert result.output.splitlines()[:2] == ["     4\tline 4", "     5\tline 5"]
    assert "read on with offset=6" in result.output


async def test_read_file_says_nothing_more_on_the_last_page(
    tools: AgentTools, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("one\ntwo\n")
    result = await call(tools, "read_file", path="a.txt", offset=2, limit=5)
    assert result.output == "     2\ttwo"


async def test_read_file_stops_at_the_byte_cap(make_tools: MakeTools, workspace: Path) -> None:
    (workspace / "a.txt").write_text("x" * 99 + "\n" + "y" * 99 + "\n" + "z\n")
    tools = make_tools(limits=ToolLimits(read_max_bytes=150))
    result = await call(tools, "read_file", path="a.txt")
    assert "y" * 99 in result.output
    assert "\tz" not in result.output
    assert "read on with offset=3" in result.output


async def test_read_file_cuts_long_lines(make_tools: MakeTools, workspace: Path) -> None:
    (workspace / "a.txt").write_text("a" * 50 + "\nshort\n")
    tools = make_tools(limits=ToolLimits(max_line_chars=10))
    result = await call(tools, "read_file", path="a.txt")
    assert result.output.splitlines() == [
        "     1\taaaaaaaaaa [line cut at 10 characters]",
        "     2\tshort",
    ]


async def test_read_file_refuses_binary_files(tools: AgentTools, workspace: Path) -> None:
    (workspace / "a.bin").write_bytes(b"\x7fELF\x00\x01")
    result = await call(tools, "read_file", path="a.bin")
    assert not result.ok
    assert "binary file" in (result.error or "")


async def test_read_file_says_an_empty_file_is_empty(tools: AgentTools, workspace: Path) -> None:
    (workspace / "a.txt").write_text("")
    result = await call(tools, "read_file", path="a.txt")
    assert result.ok
    assert result.output == "(a.txt is empty)"


async def test_read_file_past_the_end_names_the_length(tools: AgentTools, workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\ntwo\n")
    result = await call(tools, "read_file", path="a.txt", offset=9)
    assert not result.ok
    assert "offset 9 is past the end of a.txt, which has 2 lines" in (result.error or "")


async def test_read_file_of_a_missing_file_says_how_to_look(tools: AgentTools) -> None:
    result = await call(tools, "read_file", path="nope.txt")
    assert not result.ok
    assert "No such file" in (result.error or "")
    assert "list_directory or glob" in (result.error or "")


async def test_read_file_of_a_directory_is_an_error(tools: AgentTools, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    result = await call(tools, "read_file", path="sub")
    assert not result.ok
    assert "directory" in (result.error or "")


async def test_read_file_reports_the_bytes_read(tools: AgentTools, workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha\nbeta\n")
    result = await call(tools, "read_file", path="a.txt")
    assert result.metadata.bytes == 11


# list_directory


async def test_list_directory_marks_directories_sizes_and_links(
    tools: AgentTools, workspace: Path
) -> None:
    (workspace / "b.txt").write_text("12345")
    (workspace / "a").mkdir()
    os.symlink("b.txt", workspace / "c")
    result = await call(tools, "list_directory")
    assert result.output == "a/\nb.txt (5 bytes)\nc -> b.txt"


async def test_list_directory_caps_its_entries(make_tools: MakeTools, workspace: Path) -> None:
    for i in range(5):
        (workspace / f"f{i}").write_text("")
    tools = make_tools(limits=ToolLimits(list_max_entries=2))
    result = await call(tools, "list_directory", path=".")
    assert result.output.splitlines() == [
        "f0 (0 bytes)",
        "f1 (0 bytes)",
        "[3 more entries not shown: use glob to narrow down]",
    ]


# glob


def _tree(workspace: Path) -> None:
    for name in ("a.py", "b.txt", "src/c.py", "src/deep/d.py"):
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{name}\n")


async def test_glob_star_stays_in_one_directory(tools: AgentTools, workspace: Path) -> None:
    _tree(workspace)
    result = await call(tools, "glob", pattern="*.py")
    assert result.output == "a.py"


async def test_glob_double_star_spans_directories(tools: AgentTools, workspace: Path) -> None:
    _tree(workspace)
    result = await call(tools, "glob", pattern="**/*.py")
    assert result.output.splitlines() == ["a.py", "src/c.py", "src/deep/d.py"]


async def test_glob_from_a_path_shows_paths_from_there(tools: AgentTools, workspace: Path) -> None:
    _tree(workspace)
    result = await call(tools, "glob", pattern="*.py", path="src")
    assert result.output == "src/c.py"


async def test_glob_caps_its_results(make_tools: MakeTools, workspace: Path) -> None:
    _tree(workspace)
    tools = make_tools(limits=ToolLimits(glob_max_results=1))
    result = await call(tools, "glob", pattern="**/*.py")
    assert result.output.splitlines() == [
        "a.py",
        "[2 more files match: narrow the pattern or the path]",
    ]


async def test_glob_stops_walking_at_the_entry_cap(make_tools: MakeTools, workspace: Path) -> None:
    _tree(workspace)
    tools = make_tools(limits=ToolLimits(walk_max_entries=2))
    result = await call(tools, "glob", pattern="**/*")
    assert "the walk stopped after 2 entries" in result.output


async def test_glob_without_matches_says_so(tools: AgentTools, workspace: Path) -> None:
    result = await call(tools, "glob", pattern="*.rs")
    assert result.ok
    assert result.output == "no files match '*.rs' in ."


async def test_glob_refuses_an_absolute_pattern(tools: AgentTools) -> None:
    result = await call(tools, "glob", pattern="/etc/*")
    assert not result.ok
    assert "argument 'pattern'" in (result.error or "")


async def test_glob_skips_the_git_directory(tools: AgentTools, workspace: Path) -> None:
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("")
    (workspace / "a.txt").write_text("")
    result = await call(tools, "glob", pattern="**/*")
    assert result.output == "a.txt"


async def test_glob_does_not_enter_symlinked_directories(
    tools: AgentTools, workspace: Path, outside: Path
) -> None:
    os.symlink(outside, workspace / "out")
    result = await call(tools, "glob", pattern="**/*")
    assert "secret" not in result.output


async def test_glob_lists_no_symlinked_file_that_lands_outside(
    tools: AgentTools, workspace: Path, outside: Path
) -> None:
    os.symlink(outside / "secret.txt", workspace / "leak.txt")
    (workspace / "a.txt").write_text("")
    os.symlink(workspace / "a.txt", workspace / "inside.txt")
    result = await call(tools, "glob", pattern="*.txt")
    assert result.output.splitlines() == ["a.txt", "inside.txt"]


# search


async def test_search_prints_path_line_and_text(tools: AgentTools, workspace: Path) -> None:
    _tree(workspace)
    (workspace / "src" / "c.py").write_text("import os\ndef main():\n    pass\n")
    result = await call(tools, "search", pattern=r"def \w+")
    assert result.output == "src/c.py:2: def main():"


async def test_search_ignores_case_when_asked(tools: AgentTools, workspace: Path) -> None:
    (workspace / "a.txt").write_text("Hello\n")
    assert (await call(tools, "search", pattern="hello")).output.startswith("no matches")
    result = await call(tools, "search", pattern="hello", ignore_case=True)
    assert result.output == "a.txt:1: Hello"


async def test_search_glob_without_slash_matches_names(tools: AgentTools, workspace: Path) -> None:
    _tree(workspace)
    result = await call(tools, "search", pattern="py", glob="*.py")
    assert result.output.splitlines() == [
        "a.py:1: a.py",
        "src/c.py:1: src/c.py",
        "src/deep/d.py:1: src/deep/d.py",
    ]


async def test_search_glob_with_slash_matches_paths(tools: AgentTools, workspace: Path) -> None:
    _tree(workspace)
    result = await call(tools, "search", pattern="py", glob="src/*.py")
    assert result.output == "src/c.py:1: src/c.py"


async def test_search_one_file(tools: AgentTools, workspace: Path) -> None:
    _tree(workspace)
    result = await call(tools, "search", pattern="c", path="src/c.py")
    assert result.output == "src/c.py:1: src/c.py"


async def test_search_caps_its_matches(make_tools: MakeTools, workspace: Path) -> None:
    (workspace / "a.txt").write_text("x\n" * 10)
    tools = make_tools(limits=ToolLimits(search_max_matches=3))
    result = await call(tools, "search", pattern="x")
    lines = result.output.splitlines()
    assert lines[:3] == ["a.txt:1: x", "a.txt:2: x", "a.txt:3: x"]
    assert lines[3] == "[more than 3 matches: only the first 3 are shown; narrow the search]"


async def test_search_skips_binary_and_oversized_files(
    make_tools: MakeTools, workspace: Path
) -> None:
    (workspace / "a.bin").write_bytes(b"needle\x00")
    (workspace / "big.txt").write_text("needle\n" + "x" * 100)
    (workspace / "small.txt").write_text("needle\n")
    tools = make_tools(limits=ToolLimits(search_max_file_bytes=50))
    result = await call(tools, "search", pattern="needle")
    assert result.output == "small.txt:1: needle"


async def test_search_reads_no_symlinked_file_that_lands_outside(
    tools: AgentTools, workspace: Path, outside: Path
) -> None:
    os.symlink(outside / "secret.txt", workspace / "leak.txt")
    result = await call(tools, "search", pattern="secret")
    assert result.output.startswith("no matches")


async def test_search_with_a_bad_regex_names_the_argument(tools: AgentTools) -> None:
    result = await call(tools, "search", pattern="(")
    assert not result.ok
    assert "argument 'pattern' is not a valid regular expression" in (result.error or "")


# where the I/O runs


def _count_thread_hops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    hops: list[str] = []
    run_sync = trio.to_thread.run_sync

    async def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
        hops.append(fn.__name__)
        return await run_sync(fn, *args, **kwargs)

    monkeypatch.setattr(trio.to_thread, "run_sync", counted)
    return hops


async def test_a_small_file_is_read_without_a_thread_hop(
    tools: AgentTools, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hops = _count_thread_hops(monkeypatch)
    (workspace / "a.txt").write_text("small\n")
    assert (await call(tools, "read_file", path="a.txt")).ok
    assert (await call(tools, "write_file", path="b.txt", content="small")).ok
    assert hops == []


async def test_a_large_file_is_read_and_written_in_a_worker_thread(
    make_tools: MakeTools, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hops = _count_thread_hops(monkeypatch)
    (workspace / "a.txt").write_text("large enough\n")
    tools = make_tools(limits=ToolLimits(inline_io_bytes=4))
    assert (await call(tools, "read_file", path="a.txt")).ok
    assert (await call(tools, "edit_file", path="a.txt", old="large", new="big")).ok
    assert hops == ["_read_lines", "_edit"]


async def test_glob_and_search_always_walk_in_a_worker_thread(
    tools: AgentTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    hops = _count_thread_hops(monkeypatch)
    await call(tools, "glob", pattern="*")
    await call(tools, "search", pattern="x")
    assert hops == ["_glob", "_search"]


async def test_list_directory_of_a_file_says_to_read_it(tools: AgentTools, workspace: Path) -> None:
    (workspace / "a.txt").write_text("")
    result = await call(tools, "list_directory", path="a.txt")
    assert result.error == "a.txt is a file, not a directory; use read_file to read it"
