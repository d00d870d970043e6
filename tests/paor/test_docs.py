"""docs/paor.md stays true to the machine: its table is the code's table."""

from __future__ import annotations

import re
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
