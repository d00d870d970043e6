"""Writing the log never costs the run: a failing disk stops the log cleanly and is reported
once; the log is created exclusively and never follows a symbolic link."""

from __future__ import annotations

import errno
import io
import os
from pathlib import Path

import pytest
from trio.testing import wait_all_tasks_blocked

import conclave.runtime.eventlog
from conclave.runtime import Address, Envelope, open_actor_system
from conclave.runtime.codec import dumps
from conclave.runtime.eventlog import (
    EventLogExists,
    EventLogFailure,
    JsonlEventLog,
    read_event_log,
)
from conclave.runtime.events import ChildStarted, Delivered, Event, LogOpened
from tests.runtime.helpers import Journal, Note, addr, worker

EVENTS: list[Event] = [
    LogOpened(at=0.0, wall_time=1_700_000_000.0, pid=1),
    ChildStarted(at=1.0, supervisor="system", child="agent:bob", incarnation=1),
    Delivered(
        at=2.0,
        envelope=Envelope(sender=None, recipient=Address("agent", "bob"), payload=Note(text="x")),
    ),
    ChildStarted(at=3.0, supervisor="system", child="agent:carol", incarnation=1),
]


def _line(event: Event) -> bytes:
    return (dumps(event) + "\n").encode()


class FillingDisk:
    """A real file on a disk that has ``room`` bytes left: a write that does not fit is
    written in part (a short write), and the next one fails with ENOSPC, as on Linux."""

    def __init__(self, path: Path, room: int, *, truncate_fails: bool = False) -> None:
        self.file = io.FileIO(path, "w")
        self.room = room
        self.truncate_fails = truncate_fails
        self.writes = 0

    def write(self, data: bytes, /) -> int:
        self.writes += 1
        if self.room == 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        part = data[: self.room]
        self.room -= len(part)
        written = self.file.write(part)
        assert written is not None
        return written

    def truncate(self, size: int, /) -> int:
        if self.truncate_fails:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return self.file.truncate(size)

    def close(self) -> None:
        self.file.close()


def _log_with_room(
    tmp_path: Path, room: int, *, truncate_fails: bool = False
) -> tuple[JsonlEventLog, FillingDisk, list[EventLogFailure]]:
    path = tmp_path / "events.jsonl"
    disk = FillingDisk(path, room, truncate_fails=truncate_fails)
    reports: list[EventLogFailure] = []
    return JsonlEventLog.writing_to(disk, path, on_failure=reports.append), disk, reports


def _room_for_two_lines_and_a_half() -> int:
    return len(_line(EVENTS[0])) + len(_line(EVENTS[1])) + len(_line(EVENTS[2])) // 2


def test_a_failing_write_does_not_raise_out_of_record(tmp_path: Path) -> None:
    log, _, _ = _log_with_room(tmp_path, 0)

    log.record(EVENTS[0])  # would raise OSError(ENOSPC) if it were not contained


def test_a_write_cut_short_by_a_full_disk_is_cut_back_to_the_last_full_line(
    tmp_path: Path,
) -> None:
    log, _, _ = _log_with_room(tmp_path, _room_for_two_lines_and_a_half())

    for event in EVENTS:
        log.record(event)

    assert (tmp_path / "events.jsonl").read_bytes() == _line(EVENTS[0]) + _line(EVENTS[1])


def test_a_log_cut_back_after_a_failure_reads_without_a_truncated_line(tmp_path: Path) -> None:
    log, _, _ = _log_with_room(tmp_path, _room_for_two_lines_and_a_half())
    for event in EVENTS:
        log.record(event)
    log.close()

    reading = read_event_log(tmp_path / "events.jsonl")

    assert reading.events == EVENTS[:2]
    assert reading.truncated_line is None


def test_the_failure_is_reported_once_through_on_failure(tmp_path: Path) -> None:
    log, _, reports = _log_with_room(tmp_path, _room_for_two_lines_and_a_half())

    for event in EVENTS:
        log.record(event)
    log.close()

    assert reports == [
        EventLogFailure(
            path=str(tmp_path / "events.jsonl"),
            line=3,
            error="No space left on device",
            kept_bytes=len(_line(EVENTS[0]) + _line(EVENTS[1])),
            truncated=True,
        )
    ]


def test_the_failure_says_where_the_log_stopped_and_what_to_do(tmp_path: Path) -> None:
    log, _, reports = _log_with_room(tmp_path, _room_for_two_lines_and_a_half())
    for event in EVENTS:
        log.record(event)

    message = str(reports[0])

    assert f"event log {tmp_path / 'events.jsonl'} stopped at line 3" in message
    assert "No space left on device" in message
    assert "it keeps lines 1-2" in message
    assert "free disk space or choose another log directory" in message


def test_the_failure_is_kept_on_the_log_for_a_ui_to_read(tmp_path: Path) -> None:
    log, _, reports = _log_with_room(tmp_path, 0)
    assert log.failure is None

    log.record(EVENTS[0])

    assert log.failure == reports[0]


def test_records_after_a_failure_are_no_ops(tmp_path: Path) -> None:
    log, disk, _ = _log_with_room(tmp_path, 0)
    log.record(EVENTS[0])
    writes = disk.writes

    log.record(EVENTS[1])

    assert disk.writes == writes


def test_a_short_write_is_retried_for_the_rest_of_the_line(tmp_path: Path) -> None:
    class ShortWrites(FillingDisk):
        def write(self, data: bytes, /) -> int:
            self.room = 7  # at most 7 bytes per call, however much room is left
            return super().write(data)

    path = tmp_path / "events.jsonl"
    log = JsonlEventLog.writing_to(ShortWrites(path, 7), path)

    log.record(EVENTS[2])
    log.close()

    assert log.failure is None
    assert path.read_bytes() == _line(EVENTS[2])


def test_when_cutting_back_fails_too_the_report_says_the_last_line_may_be_cut_off(
    tmp_path: Path,
) -> None:
    log, _, reports = _log_with_room(tmp_path, 10, truncate_fails=True)

    log.record(EVENTS[0])

    assert reports[0].truncated is False
    assert "its last line may be cut off" in str(reports[0])


def test_writing_to_dev_full_neither_raises_nor_reports_twice(tmp_path: Path) -> None:
    reports: list[EventLogFailure] = []
    log = JsonlEventLog.writing_to(
        io.FileIO("/dev/full", "w"), "/dev/full", on_failure=reports.append
    )

    for event in EVENTS:
        log.record(event)
    log.close()

    assert [r.error for r in reports] == ["No space left on device"]


def test_an_event_the_codec_cannot_encode_stops_the_log_without_raising(tmp_path: Path) -> None:
    reports: list[EventLogFailure] = []
    path = tmp_path / "events.jsonl"
    log = JsonlEventLog(path, on_failure=reports.append)
    log.record(EVENTS[0])

    log.record(ChildStarted(at=1.0, supervisor=object(), child="c", incarnation=1))  # type: ignore[arg-type]

    assert reports[0].line == 2
    assert "TypeError" in reports[0].error
    assert path.read_bytes() == _line(EVENTS[0])


def test_an_event_longer_than_a_line_may_be_stops_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(conclave.runtime.eventlog, "MAX_LINE_BYTES", 200)
    reports: list[EventLogFailure] = []
    log = JsonlEventLog(tmp_path / "events.jsonl", on_failure=reports.append)

    log.record(ChildStarted(at=1.0, supervisor="s" * 300, child="c", incarnation=1))

    assert "more than the 200 a log line may hold" in reports[0].error


def test_a_callback_that_raises_does_not_reach_the_recorder(tmp_path: Path) -> None:
    def broken(failure: EventLogFailure) -> None:
        raise RuntimeError("the UI is broken")

    log = JsonlEventLog.writing_to(FillingDisk(tmp_path / "e.jsonl", 0), "e", on_failure=broken)

    log.record(EVENTS[0])

    assert log.failure is not None


def test_an_error_on_close_is_reported_not_raised(tmp_path: Path) -> None:
    class FailingClose(FillingDisk):
        def close(self) -> None:
            super().close()
            raise OSError(errno.EIO, os.strerror(errno.EIO))

    path = tmp_path / "events.jsonl"
    reports: list[EventLogFailure] = []
    log = JsonlEventLog.writing_to(FailingClose(path, 1000), path, on_failure=reports.append)
    log.record(EVENTS[0])

    log.close()

    assert [r.error for r in reports] == ["closing the file failed: Input/output error"]


async def test_a_run_whose_log_fails_completes(tmp_path: Path, journal: Journal) -> None:
    log, _, reports = _log_with_room(tmp_path, 0)

    async with open_actor_system(taps=[log]) as system:
        system.spawn(addr("a"), worker(journal))
        await wait_all_tasks_blocked()
        await system.tell(addr("a"), Note(text="still delivered"))
        await wait_all_tasks_blocked()

    assert journal.handled("a") == [("still delivered", 1)]
    assert len(reports) == 1


# ---------------------------------------------------------------------------- exclusive


def test_a_second_log_into_the_same_path_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    JsonlEventLog(path).close()

    with pytest.raises(EventLogExists, match=f"event log {path} already exists") as raised:
        JsonlEventLog(path)
    assert "choose another log directory" in str(raised.value)


def test_the_refusal_is_a_file_exists_error(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    JsonlEventLog(path).close()

    with pytest.raises(FileExistsError):
        JsonlEventLog(path)


def test_a_refused_second_log_leaves_the_first_untouched(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    first = JsonlEventLog(path)
    first.record(EVENTS[0])
    first.close()

    with pytest.raises(EventLogExists):
        JsonlEventLog(path)

    assert path.read_bytes() == _line(EVENTS[0])


def test_a_dangling_symlink_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.jsonl"
    path = tmp_path / "events.jsonl"
    path.symlink_to(target)

    with pytest.raises(EventLogExists, match=r"is a symbolic link \(to .*elsewhere\.jsonl\)"):
        JsonlEventLog(path)
    assert not target.exists()


def test_a_symlink_to_an_existing_file_is_refused_and_the_file_untouched(tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me", encoding="utf-8")
    path = tmp_path / "events.jsonl"
    path.symlink_to(target)

    with pytest.raises(EventLogExists, match="a log never follows links"):
        JsonlEventLog(path)
    assert target.read_text(encoding="utf-8") == "keep me"
