"""A long answer costs the event log about its own size, however often the run passes it
around (submitted, accepted, recorded, shown to every voter, presented, returned), and the
log still reads back whole."""

from __future__ import annotations

from pathlib import Path

import conclave.actors.kinds  # noqa: F401  (registers every kind a run's log holds)
from conclave.actors.events.view import RunView
from conclave.actors.run.driver import RunSpec, run
from conclave.runtime.eventlog import read_event_log
from tests.coordination.helpers import TASK, agent, config

LONG = "One long answer. " + "Every line of it matters to somebody. " * 27_600  # about 1 MB


async def test_a_one_megabyte_answer_makes_a_log_of_about_one_megabyte(
    autojump_clock: object, tmp_path: Path
) -> None:
    cfg = config(
        agent("long", latency=0.1, answer_text=LONG),
        agent("b", seed=2, latency=0.2),
        agent("c", seed=3, latency=0.2),
    )

    result = await run(RunSpec(task=TASK, config=cfg, log_dir=tmp_path))

    assert result.final_answer == LONG  # it won, and was presented: mentioned a dozen times
    size = (tmp_path / "events.jsonl").stat().st_size
    assert size < 1.1 * len(LONG)  # 12.6 times its size when every mention wrote it
    view = RunView.from_events(read_event_log(tmp_path / "events.jsonl").events)
    assert view.final_answer == LONG
    assert [a.content for a in view.answers if a.agent == "long"] == [LONG]
