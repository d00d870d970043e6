"""Conclave installs one name. The wheel built from this repository holds only ``conclave``
and its dist-info, and ``import conclave`` works beside a user's own ``config.py``, ``ui.py``
and ``runtime.py`` (generic names that five top-level packages once shadowed or were
shadowed by). Built for real: a wheel from a copy of the repository, installed by pip into a
fresh virtual environment that borrows this one's dependencies but not its editable install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

import conclave

# One xdist worker runs this module, so the wheel is built and installed once.
pytestmark = pytest.mark.xdist_group("packaging")

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("runtime", "actors", "ui", "config", "benchmarks")
"""The repository's top-level folders that are installed, as ``conclave.<folder>``."""
_PIP = (sys.executable, "-m", "pip")


@attrs.frozen(kw_only=True)
class Installed:
    wheel: Path
    python: Path
    site_packages: Path
    added: frozenset[str]
    """What installing the wheel added to the fresh environment's site-packages."""


def _copy_repository(destination: Path) -> None:
    """The tracked files (the links under conclave/ included), so the build writes its
    ``build/`` and egg-info into the copy, never into the checkout under test."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, (entry.decode() for entry in listed)):
        source, target = ROOT / name, destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        elif source.is_file():
            shutil.copy2(source, target)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    scratch = tmp_path_factory.mktemp("packaging")
    source = scratch / "source"
    _copy_repository(source)
    dist = scratch / "dist"
    subprocess.run(
        [*_PIP, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist), str(source)],
        check=True,
        capture_output=True,
    )
    (wheel,) = dist.glob("conclave-*.whl")
    venv = scratch / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site_packages = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    before = set(os.listdir(site_packages))
    subprocess.run(
        [*_PIP, "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        capture_output=True,
    )
    added = frozenset(set(os.listdir(site_packages)) - before)
    # Borrow this environment's dependencies as a plain path entry: .pth files inside it (the
    # editable install's finder among them) are not processed, so `conclave` is the wheel's.
    borrowed = sysconfig.get_paths()["purelib"]
    (site_packages / "zz_borrowed_dependencies.pth").write_text(borrowed + "\n")
    yield Installed(wheel=wheel, python=python, site_packages=site_packages, added=added)


def _shadowing_directory(tmp_path: Path) -> Path:
    for name in ("config.py", "ui.py", "runtime.py", "actors.py", "benchmarks.py"):
        (tmp_path / name).write_text("raise ImportError('the user module was imported')\n")
    return tmp_path


def test_the_wheel_holds_only_the_conclave_package_and_its_dist_info(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as wheel:
        tops = {name.split("/")[0] for name in wheel.namelist()}

    assert tops == {"conclave", f"{installed.wheel.name.split('-')[0]}-0.1.0.dist-info"}


def test_installing_the_wheel_adds_only_conclave_and_its_dist_info(installed: Installed) -> None:
    assert {name for name in installed.added if not name.endswith(".dist-info")} == {"conclave"}
    assert [name for name in installed.added if name.endswith(".dist-info")] == [
        "conclave-0.1.0.dist-info"
    ]


def test_the_wheel_installs_every_folder_as_a_subpackage_with_the_config_examples(
    installed: Installed,
) -> None:
    package = installed.site_packages / "conclave"

    assert all((package / folder / "__init__.py").is_file() for folder in FOLDERS)
    assert not any((package / folder).is_symlink() for folder in FOLDERS)
    assert (package / "config" / "examples" / "openai.yaml").is_file()


def test_import_conclave_works_beside_a_users_config_ui_and_runtime_modules(
    installed: Installed, tmp_path: Path
) -> None:
    check = (
        "import conclave, conclave.ui.cli; "
        "print(conclave.__file__); print(conclave.RunSpec.__module__, conclave.load_config)"
    )
    done = subprocess.run(
        [str(installed.python), "-c", check],
        cwd=_shadowing_directory(tmp_path),
        capture_output=True,
        text=True,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith(str(installed.site_packages))
    assert "conclave.actors.run.spec" in done.stdout


def test_python_m_conclave_runs_a_task_from_the_installed_wheel(
    installed: Installed, tmp_path: Path
) -> None:
    logs, task = ("--log-dir", str(tmp_path / "logs")), "Name three uses of a paperclip"
    done = subprocess.run(
        [str(installed.python), "-m", "conclave", "run", "--output-format", "json", *logs, task],
        cwd=_shadowing_directory(tmp_path),
        capture_output=True,
        text=True,
        env={**os.environ, "HOME": str(tmp_path)},
    )

    assert done.returncode == 0, done.stderr
    assert '"termination": "completed"' in done.stdout


def test_import_conclave_imports_none_of_the_runtime() -> None:
    check = "import sys, conclave; print(sorted(m for m in sys.modules if 'conclave.' in m))"
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True)

    assert done.stdout.strip() == "[]"


def test_every_public_name_resolves_to_what_its_module_defines() -> None:
    for name in conclave.__all__:
        value = getattr(conclave, name)
        assert getattr(value, "__name__", name) == name
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = conclave.nothing_here


def test_every_lazily_loaded_name_is_public_and_every_public_name_loads() -> None:
    assert sorted(conclave._MODULE_OF) == sorted(conclave.__all__)
