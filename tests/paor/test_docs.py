"""docs/paor.md stays true to the machine: its table is the code's table, and its worked
rename example runs as written, showing what the page says it shows."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conclave.actors.paor.state import TRANSITIONS, PaorPhase

DOC = Path(__file__).parents[2] / "docs" / "paor.md"


def test_the_pages_transition_table_is_the_machines() -> None:
    documented: dict[PaorPhase, set[PaorPhase]] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        row = re.match(r"^\| (`[a-z_]+`(?:, `[a-z_]+`)*) \| (.+) \|$", line)
        if row is None:
            continue
        sources = re.findall(r"`([a-z_]+)`", row.group(1))
        targets = set(re.findall(r"`([a-z_]+)`", row.group(2)))
        if not all(s in PaorPhase._value2member_map_ for s in sources):
            continue
        for source in sources:
            documented[PaorPhase(source)] = {PaorPhase(t) for t in targets}
    assert documented == {phase: set(targets) for phase, targets in TRANSITIONS.items()}


WORKED = "## Worked example: rename a function, offline\n"


def _worked_blocks(kind: str) -> list[str]:
    """The section's fenced blocks of ``kind``: ``sh`` (the commands), ``text`` (standard
    output) or ``stderr`` (lines standard error shows)."""
    section = DOC.read_text(encoding="utf-8").split(WORKED, 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"^```{kind}\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)


def test_the_worked_rename_example_runs_as_documented(tmp_path: Path) -> None:
    conclave_bin = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{conclave_bin}{os.pathsep}{os.environ.get('PATH', '')}"}
    script = "\n".join(_worked_blocks("sh"))
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.stdout == "".join(_worked_blocks("text")), done.stderr
    for line in "".join(_worked_blocks("stderr")).splitlines():
        assert line in done.stderr, line
