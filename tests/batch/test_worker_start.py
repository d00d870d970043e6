"""A worker process starts light: what spawning unpickles imports none of the runtime, so
the batch's process can start every worker at once (see :mod:`actors.batch.worker`)."""

from __future__ import annotations

import subprocess
import sys


def test_the_worker_entry_point_and_its_claims_import_no_runtime() -> None:
    check = (
        "import sys, conclave.actors.batch.worker, conclave.actors.batch.claims; "
        "heavy = sorted(m for m in sys.modules if m == 'trio' or m.startswith(("
        "'conclave.actors.run', 'conclave.runtime', 'conclave.config'))); print(heavy)"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
