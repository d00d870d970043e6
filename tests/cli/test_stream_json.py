"""stream-json is the contract in docs/stream-json.md: every event type and field documented
there is what the stream carries, and the stream's shape (first and last lines, ``seq``,
``t``, ``time``, escapes) holds for real runs."""

from __future__ import annotations

import datetime
import io
import json
import re
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conclave.actors.coordination.events import AnswerAdded, RunStarted
from conclave.actors.events import DomainEvent, TextDelta
from conclave.actors.run.driver import RunSpec, run
from conclave.actors.run.events import RunEnded
from conclave.actors.run.result import RunResult
from conclave.actors.run.termination import Termination
from conclave.config.schema import (
    AgentConfig,
    ConclaveConfig,
    FinalAnswerStrategy,
    ScriptedBackendConfig,
)
from conclave.runtime import LogOpened, encode, read_event_log
from conclave.ui.cli import main
from conclave.ui.exit_codes import ExitCode
from conclave.ui.progress import RunClock, StreamJson
from tests.cli.helpers import REQUIRED_KEYS, TASK, fast_agents, write_config
from tests.events.strategies import DOMAIN_EVENTS, strategy_for_class

DOC = Path(__file__).resolve().parents[2] / "docs" / "stream-json.md"
COMMON = ("type", "run_id", "seq", "t", "time")
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def documented() -> dict[str, dict[str, str]]:
    """The doc's tables: heading → {field: type}. A ``### `type``` heading names a line type;
    the table of common fields sits under ``## Lines``."""
    tables: dict[str, dict[str, str]] = {}
    heading = ""
    for line in DOC.read_text(encoding="utf-8").splitlines():
        title = re.match(r"^#+ `?([^`]+)`?$", line)
        if title:
            heading = title.group(1)
            continue
        row = re.match(r"^\| `([a-z_]+)` \| ([a-z ]+) \|", line)
        if row:
            tables.setdefault(heading, {})[row.group(1)] = row.group(2)
    return tables


DOCUMENTED = documented()
LINE_TYPES = {heading for heading in DOCUMENTED if heading != "Lines"} | {"result"}


def conforms(value: Any, documented_type: str) -> bool:
    """Whether a JSON value is of a type as the doc names it (``string or null``...)."""
    if documented_type.endswith(" or null"):
        return value is None or conforms(value, documented_type.removesuffix(" or null"))
    checks = {
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "object": lambda v: isinstance(v, dict),
        "array of strings": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
        "array of objects": lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v),
        "object of integers": lambda v: (
            isinstance(v, dict) and all(isinstance(x, int) for x in v.values())
        ),
    }
    return checks[documented_type](value)


def config(n: int = 2) -> ConclaveConfig:
    members = tuple(
        AgentConfig(id=f"a{i}", backend=ScriptedBackendConfig(seed=i)) for i in range(1, n + 1)
    )
    return ConclaveConfig(agents=members)


def renderer(out: io.StringIO, *, include_partial: bool = False, n: int = 2) -> StreamJson:
    """A stream of a run of ``n`` agents, outside any trio run: its clock starts at 0."""
    clock = RunClock.__new__(RunClock)
    clock.origin, clock.wall = 0.0, 1_700_000_000.0
    spec = RunSpec(task=TASK, config=config(n))
    return StreamJson(out, spec=spec, run_id="r1", include_partial=include_partial, clock=clock)


def started(n: int = 2) -> RunStarted:
    ids = tuple(f"a{i}" for i in range(1, n + 1))
    return RunStarted(
        at=0.5,
        task=TASK,
        agents=ids,
        anonymous_ids=tuple(f"agent{i}" for i in range(1, n + 1)),
        strategy=FinalAnswerStrategy.WINNER_PRESENT,
    )


def lines_of(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().split("\n") if line]


def stream(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, Any]]:
    code = main(["run", "--output-format", "stream-json", *args])
    out, err = capsys.readouterr()
    assert code == ExitCode.OK, err
    return [json.loads(line) for line in out.split("\n") if line]


@pytest.fixture(scope="module")
def finished() -> RunResult:
    """A real result, for ``finish``."""
    clock = trio.testing.MockClock(autojump_threshold=0)
    return trio.run(run, RunSpec(task=TASK, config=config()), clock=clock)


# ---------------------------------------------------------------------------- the schema


def test_every_domain_event_type_is_documented_and_nothing_else() -> None:
    assert set(DOMAIN_EVENTS) | {"result"} == LINE_TYPES


def test_the_common_fields_are_documented() -> None:
    assert tuple(DOCUMENTED["Lines"]) == COMMON


def test_no_event_has_a_field_named_like_a_common_field() -> None:
    for kind, cls in DOMAIN_EVENTS.items():
        clashes = set(COMMON) & set(attrs.fields_dict(cls))
        assert not clashes, f"{kind} has fields {clashes} that its stream line already uses"


@pytest.mark.parametrize("kind", sorted(set(DOMAIN_EVENTS) - {"run_started"}))
@settings(max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_event_type_streams_exactly_its_documented_fields(
    kind: str, data: st.DataObject
) -> None:
    event = data.draw(strategy_for_class(DOMAIN_EVENTS[kind]))
    event = attrs.evolve(event, at=data.draw(st.floats(0.5, 1e6)))  # a run's times
    out = io.StringIO()
    stream_json = renderer(out, include_partial=True)
    stream_json.record(started())
    stream_json.record(event)

    line = lines_of(out)[-1]

    schema = DOCUMENTED[kind]
    assert tuple(line)[: len(COMMON)] == COMMON
    assert set(line) == set(COMMON) | set(schema)
    for field, documented_type in {**DOCUMENTED["Lines"], **schema}.items():
        assert conforms(line[field], documented_type), (kind, field, line[field])
    assert line["type"] == kind


def test_run_started_streams_exactly_its_documented_fields() -> None:
    out = io.StringIO()
    renderer(out).record(started())

    [line] = lines_of(out)

    assert set(line) == set(COMMON) | set(DOCUMENTED["run_started"])
    for field, documented_type in {**DOCUMENTED["Lines"], **DOCUMENTED["run_started"]}.items():
        assert conforms(line[field], documented_type), field
    assert line["agents"] == [
        {"id": "a1", "anonymous_id": "agent1", "backend": "scripted"},
        {"id": "a2", "anonymous_id": "agent2", "backend": "scripted"},
    ]


def test_result_streams_the_json_results_fields(finished: RunResult) -> None:
    out = io.StringIO()
    stream_json = renderer(out)
    stream_json.record(started())
    stream_json.finish(finished)

    line = lines_of(out)[-1]

    assert line["type"] == "result"
    assert tuple(line)[: len(COMMON)] == COMMON
    assert set(line) >= REQUIRED_KEYS


# ---------------------------------------------------------------------------- the renderer


def test_deltas_are_streamed_only_with_include_partial_messages() -> None:
    delta = TextDelta(at=1.0, agent="a1", text="Hel")
    without, with_ = io.StringIO(), io.StringIO()
    for out, include in ((without, False), (with_, True)):
        stream_json = renderer(out, include_partial=include)
        stream_json.record(started())
        stream_json.record(delta)

    assert [line["type"] for line in lines_of(without)] == ["run_started"]
    assert [line["type"] for line in lines_of(with_)] == ["run_started", "text_delta"]


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\x85", "\ud800"])
def test_characters_a_line_splitter_breaks_on_are_escaped(char: str) -> None:
    out = io.StringIO()
    stream_json = renderer(out)
    stream_json.record(started())
    stream_json.record(AnswerAdded(at=1.0, agent="a1", label="agent1.1", content=f"a{char}b"))

    text = out.getvalue()

    assert char not in text
    assert text.splitlines() == text.rstrip("\n").split("\n")
    assert json.loads(text.splitlines()[-1])["content"] == f"a{char}b"
    text.encode("utf-8")  # a lone surrogate would not encode


def test_events_before_run_started_wait_for_it() -> None:
    out = io.StringIO()
    stream_json = renderer(out)
    early = AnswerAdded(at=0.2, agent="a1", label="agent1.1", content="x")
    stream_json.record(early)
    stream_json.record(started())

    lines = lines_of(out)
    assert [line["type"] for line in lines] == ["run_started", "answer_added"]
    assert lines[0]["t"] <= lines[1]["t"]


def test_a_second_run_started_is_not_streamed() -> None:
    out = io.StringIO()
    stream_json = renderer(out)
    stream_json.record(started())
    stream_json.record(started())

    assert len(lines_of(out)) == 1


def test_nothing_but_the_result_follows_run_ended(finished: RunResult) -> None:
    out = io.StringIO()
    stream_json = renderer(out)
    stream_json.record(started())
    stream_json.record(
        RunEnded(at=2.0, termination=Termination.COMPLETED, winner="a1", final_answer="x")
    )
    stream_json.record(AnswerAdded(at=3.0, agent="a1", label="agent1.2", content="late"))
    stream_json.finish(finished)

    assert [line["type"] for line in lines_of(out)] == ["run_started", "run_ended", "result"]


def test_a_run_stopped_before_it_started_still_streams_run_started_first(
    finished: RunResult,
) -> None:
    out = io.StringIO()
    renderer(out).finish(finished)

    lines = lines_of(out)
    assert [line["type"] for line in lines] == ["run_started", "result"]
    assert [a["anonymous_id"] for a in lines[0]["agents"]] == ["agent1", "agent2"]


def test_the_log_opening_sets_the_streams_origin() -> None:
    out = io.StringIO()
    stream_json = renderer(out)
    stream_json.record(LogOpened(at=0.25, wall_time=1_800_000_000.0, pid=1))
    stream_json.record(started())  # at 0.5

    [line] = lines_of(out)
    assert line["t"] == 0.25
    assert line["time"] == "2027-01-15T08:00:00.250Z"


# ---------------------------------------------------------------------------- real runs


def test_a_run_streams_run_started_first_with_the_effective_settings(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = stream(capsys, "--config", str(fast_config), "--refinement", "off", TASK)

    first = lines[0]
    assert first["type"] == "run_started"
    assert [a["id"] for a in first["agents"]] == ["agent-1", "agent-2", "agent-3"]
    # --refinement off in multi mode: the overrides the mode table lists.
    assert first["orchestrator"]["max_new_answers_per_agent"] == 1
    assert first["orchestrator"]["disable_injection"] is True
    assert first["orchestrator"]["final_answer_strategy"] == "synthesize"
    assert first["strategy"] == "synthesize"


def test_a_run_streams_run_ended_then_result_last(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = stream(capsys, "--config", str(fast_config), TASK)

    assert [line["type"] for line in lines[-2:]] == ["run_ended", "result"]
    assert [line["type"] for line in lines].count("run_started") == 1


def test_seq_numbers_the_lines_from_zero_without_a_gap(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = stream(capsys, "--config", str(fast_config), TASK)

    assert [line["seq"] for line in lines] == list(range(len(lines)))


def test_t_never_decreases_and_time_is_utc_iso_8601(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = stream(capsys, "--config", str(fast_config), TASK)

    ts = [line["t"] for line in lines]
    assert ts == sorted(ts)
    assert ts[0] >= 0
    assert all(ISO_UTC.match(line["time"]) for line in lines)
    now = datetime.datetime.now(datetime.UTC)
    first = datetime.datetime.fromisoformat(lines[0]["time"])
    assert abs((now - first).total_seconds()) < 60


def test_every_line_carries_the_run_id_which_names_the_log_directory(
    fast_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_dir = tmp_path / "my-run"
    lines = stream(capsys, "--config", str(fast_config), "--log-dir", str(log_dir), TASK)

    assert {line["run_id"] for line in lines} == {"my-run"}


def test_each_event_line_is_the_logs_event_with_t_and_time_from_log_opened(
    fast_config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log_dir = tmp_path / "run"
    lines = stream(capsys, "--config", str(fast_config), "--log-dir", str(log_dir), TASK)
    events = read_event_log(log_dir / "events.jsonl").events
    [opened] = [e for e in events if isinstance(e, LogOpened)]
    logged = [e for e in events if isinstance(e, DomainEvent) and not isinstance(e, RunStarted)]

    streamed = [line for line in lines if line["type"] not in ("run_started", "result")]

    assert len(streamed) == len(logged)
    for line, event in zip(streamed, logged, strict=True):
        data = encode(event)
        assert line["type"] == data.pop("kind")
        at = data.pop("at")
        assert {k: v for k, v in line.items() if k not in COMMON} == json.loads(json.dumps(data))
        assert line["t"] == round(at - opened.at, 6)
        # wall + (at - origin), as the stream adds them: (wall + at) - origin rounds at the
        # wall time's scale (~2e-7 s) and then crosses a millisecond about once in 100 runs.
        since = at - opened.at
        wall = datetime.datetime.fromtimestamp(opened.wall_time + since, datetime.UTC)
        assert line["time"] == wall.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_a_task_with_line_separators_streams_lines_that_survive_a_line_splitter(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task = "one\u2028two\u2029three\x85four"
    code = main(["run", "--output-format", "stream-json", "--config", str(fast_config), task])
    out = capsys.readouterr().out

    assert code == ExitCode.OK
    assert out.splitlines() == out.rstrip("\n").split("\n")
    assert json.loads(out.splitlines()[0])["task"] == task


def test_verbose_adds_nothing_to_the_stream(
    fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = stream(capsys, "--config", str(fast_config), "--verbose", TASK)

    assert {line["type"] for line in lines} <= LINE_TYPES


def test_include_partial_messages_is_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(tmp_path / "c.yaml", fast_agents(2))

    lines = stream(capsys, "--config", str(cfg), "--include-partial-messages", TASK)

    assert lines[-1]["type"] == "result"


@pytest.mark.parametrize(
    "args",
    [["--config", "missing.yaml", TASK], ["--context", "missing-dir", TASK], ["--timeout", "-1"]],
    ids=["config", "context", "flag"],
)
def test_a_run_that_never_starts_writes_nothing_on_stdout(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "--output-format", "stream-json", *args])

    assert code == ExitCode.USAGE
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip()


@pytest.mark.parametrize("output_format", ["text", "json"])
def test_include_partial_messages_without_stream_json_is_a_usage_error(
    output_format: str, fast_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["run", "--config", str(fast_config), "--output-format", output_format,
         "--include-partial-messages", TASK]
    )  # fmt: skip

    assert code == ExitCode.USAGE
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (
        "conclave: --include-partial-messages applies only to --output-format stream-json; "
        "add that, or drop the flag"
    )
    assert not Path(".conclave").exists()  # nothing ran
