"""The file tools import nothing heavy: the docker SDK loads only with a docker sandbox."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_tools_never_imports_the_docker_sdk() -> None:
    probe = "import sys, conclave.actors.tools.executor; print('docker' in sys.modules)"
    found = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert found.stdout.strip() == "False"
