""".gitignore matching: the common pattern forms, and glob/search skipping what it ignores."""

from __future__ import annotations

from pathlib import Path

import pytest

from conclave.actors.tools.executor import AgentTools
from conclave.actors.tools.gitignore import IgnoreFile, Ignorer
from tests.tools.helpers import call

BASE = Path("/repo")


def ignored(lines: list[str], relative: str, *, is_dir: bool = False) -> bool:
    ignorer = Ignorer((IgnoreFile.parse(BASE, lines),))
    return ignorer.ignored(BASE / relative, is_dir=is_dir)


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.log", "a.log", True),
        ("*.log", "deep/er/a.log", True),
        ("*.log", "a.txt", False),
        ("/top.txt", "top.txt", True),
        ("/top.txt", "sub/top.txt", False),
        ("sub/x.txt", "sub/x.txt", True),
        ("sub/x.txt", "other/sub/x.txt", False),
        ("**/cache", "a/b/cache", True),
        ("logs/**", "logs/a/b.txt", True),
        ("a/**/z", "a/z", True),
        ("a/**/z", "a/b/c/z", True),
        ("fil?.txt", "file.txt", True),
        ("fil?.txt", "fil.txt", False),
        ("[ab].txt", "a.txt", True),
        ("[!ab].txt", "a.txt", False),
        ("[!ab].txt", "c.txt", True),
        ("\\#hash", "#hash", True),
        ("# comment", "# comment", False),
    ],
)
def test_pattern_forms(pattern: str, path: str, expected: bool) -> None:
    assert ignored([pattern], path) is expected


def test_a_trailing_slash_matches_directories_only() -> None:
    assert ignored(["build/"], "build", is_dir=True)
    assert not ignored(["build/"], "build", is_dir=False)


def test_negation_re_includes_and_the_last_line_wins() -> None:
    assert not ignored(["*.log", "!keep.log"], "keep.log")
    assert ignored(["!keep.log", "*.log"], "keep.log")


def test_a_deeper_gitignore_overrides_a_shallower_one() -> None:
    ignorer = Ignorer(
        (
            IgnoreFile.parse(BASE, ["*.log"]),
            IgnoreFile.parse(BASE / "sub", ["!keep.log"]),
        )
    )
    assert not ignorer.ignored(BASE / "sub" / "keep.log", is_dir=False)
    assert ignorer.ignored(BASE / "keep.log", is_dir=False)


def _ignored_tree(workspace: Path) -> None:
    (workspace / ".gitignore").write_text("*.log\nbuild/\n!keep.log\n")
    for name in ("a.txt", "x.log", "keep.log", "build/out.txt", "src/y.log", "src/b.txt"):
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("needle\n")


async def test_glob_skips_gitignored_files(tools: AgentTools, workspace: Path) -> None:
    _ignored_tree(workspace)
    result = await call(tools, "glob", pattern="**/*")
    assert result.output.splitlines() == [".gitignore", "a.txt", "keep.log", "src/b.txt"]


async def test_search_skips_gitignored_files(tools: AgentTools, workspace: Path) -> None:
    _ignored_tree(workspace)
    result = await call(tools, "search", pattern="needle")
    assert result.output.splitlines() == [
        "a.txt:1: needle",
        "keep.log:1: needle",
        "src/b.txt:1: needle",
    ]


async def test_a_walk_from_a_subdirectory_keeps_the_rules_above_it(
    tools: AgentTools, workspace: Path
) -> None:
    _ignored_tree(workspace)
    result = await call(tools, "glob", pattern="*", path="src")
    assert result.output == "src/b.txt"


async def test_a_nested_gitignore_applies_below_its_directory(
    tools: AgentTools, workspace: Path
) -> None:
    _ignored_tree(workspace)
    (workspace / "src" / ".gitignore").write_text("b.txt\n")
    result = await call(tools, "glob", pattern="**/b.txt")
    assert result.output.startswith("no files match")


def test_a_close_bracket_first_in_a_class_is_one_of_its_characters() -> None:
    assert ignored(["[]a].txt"], "].txt")
    assert not ignored(["[!]a].txt"], "a.txt")


def test_a_line_that_is_not_a_valid_pattern_is_skipped() -> None:
    assert ignored(["[z-a].txt", "*.log"], "x.log")
    assert not ignored(["[z-a].txt"], "z.txt")


async def test_an_invalid_glob_is_an_error_naming_the_argument(tools: AgentTools) -> None:
    result = await call(tools, "glob", pattern="[z-a]")
    assert (result.error or "").startswith("argument 'pattern' ('[z-a]') is not a valid glob")
    searched = await call(tools, "search", pattern="x", glob="[z-a]")
    assert (searched.error or "").startswith("argument 'glob' ('[z-a]') is not a valid glob")
