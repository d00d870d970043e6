"""Every third-party module the shipped packages import is a declared dependency of the
distribution, so `pip install -e .` (the README's first command) is enough to run everything
but the optional extras. The dev extra does not count: the test tools pull packages in (pytest
brings pygments) that a user's install lacks, and the REPL once crashed on start for that."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ("runtime", "actors", "ui", "config", "benchmarks")
"""The folders installed as ``conclave.<folder>``."""


def _name(requirement: str) -> str:
    found = re.match(r"[A-Za-z0-9_.\-]+", requirement)
    assert found is not None
    return re.sub(r"[-_.]+", "-", found.group(0)).lower()


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {_name(r) for r in project["dependencies"]}
    for extra, requirements in project["optional-dependencies"].items():
        if extra != "dev":
            names |= {_name(r) for r in requirements}
    return names


def _modules_imported_by(path: Path) -> list[str]:
    """Every absolute import of ``path``, by its full dotted name."""
    modules: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules.append(node.module)
    return modules


def _imported() -> dict[str, str]:
    """Top-level third-party module → a file that imports it."""
    found: dict[str, str] = {}
    for package in SHIPPED:
        for path in sorted((ROOT / package).rglob("*.py")):
            for module in _modules_imported_by(path):
                top = module.split(".")[0]
                if top not in sys.stdlib_module_names and top not in ("conclave", "tests"):
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_every_third_party_import_of_the_shipped_code_is_a_declared_dependency() -> None:
    distributions = importlib.metadata.packages_distributions()
    declared = _declared()
    undeclared = {
        module: where
        for module, where in _imported().items()
        if not {_name(d) for d in distributions.get(module, [module])} & declared
    }

    assert undeclared == {}


def test_no_module_imports_a_folder_by_its_bare_name() -> None:
    """The folders are installed as ``conclave.<folder>`` only. In the repository ``import
    runtime`` would still work (its folder is on the path), and then fail in every installed
    copy (tests/test_packaging.py installs one)."""
    offenders = {
        str(path.relative_to(ROOT)): bare
        for folder in (*SHIPPED, "tests", "conclave")  # rglob does not follow conclave/'s links
        for path in sorted((ROOT / folder).rglob("*.py"))
        if (bare := [m for m in _modules_imported_by(path) if m.split(".")[0] in SHIPPED])
    }

    assert offenders == {}
