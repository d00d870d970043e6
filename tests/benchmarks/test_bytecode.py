"""The benchmarks that time fresh processes compile Conclave first, as installing it does."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import conclave.actors.llm.chat_wire
import conclave.runtime.actor
from conclave.benchmarks.bytecode import compile_conclave


def test_every_folder_of_the_package_is_compiled_beside_its_sources() -> None:
    # Modules under the package's symbolic-link folders, which compileall alone skips.
    modules = (conclave.actors.llm.chat_wire, conclave.runtime.actor)
    cached = [Path(importlib.util.cache_from_source(m.__file__ or "")) for m in modules]
    for path in cached:
        path.unlink(missing_ok=True)

    compile_conclave()

    assert all(path.exists() for path in cached)
