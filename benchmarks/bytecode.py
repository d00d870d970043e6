"""Fresh processes that start as an installed Conclave starts: with its bytecode cached.

An installed package's modules are compiled once (``pip`` compiles them; an editable
install writes ``__pycache__`` beside its sources on first import). Where
``PYTHONDONTWRITEBYTECODE`` is set (some CI machines and sandboxes set it) nothing writes
them, and every fresh process compiles the ~500 modules a run imports from source: about
0.3 s that no user pays, so a start-up measured that way measures the compiler. Python
still reads bytecode that exists, so the benchmarks that time fresh processes compile
Conclave first, where its modules are.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import conclave

__all__ = ["compile_conclave"]


def compile_conclave() -> None:
    """Write the bytecode of every Conclave module beside its source (``__pycache__``), as
    installing does. Raises :class:`subprocess.CalledProcessError` if compiling fails."""
    package = Path(conclave.__file__).parent
    # The package's folders are symbolic links, which compileall does not follow below the
    # folders it is given: each is given.
    folders = [package, *(p for p in package.iterdir() if p.is_dir())]
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", *map(str, folders)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
