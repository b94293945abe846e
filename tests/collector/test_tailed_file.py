"""One followed file on its own: the bytes it gains, the records they make, and how far they reach.

Each test writes a real file, opens it as the tailer would (`os.open`, an identity from its first
bytes) and calls `read`, `flush_idle` and `flush_assembled` itself. Offsets are computed from the
bytes written.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from datetime import timezone
from pathlib import Path

import pytest

from npuwatch.collector.identity import FileIdentity, identify, mark_of
from npuwatch.collector.tailed_file import ReadBatch, TailedFile, shown_path
from npuwatch.parsers.stream import ParseLimits
from npuwatch.parsers.timestamps import LocalClock
from npuwatch.records import Flag
from tests.agent.harness import plog_line

CLOCK = LocalClock(timezone.utc)
PID = 7


def line(number: int, text: str = "step") -> bytes:
    """A whole plog line, with its line end (75 bytes for numbers 0 to 9)."""
    return (plog_line(PID, number, text=text) + "\n").encode()


def originals(batch: ReadBatch) -> list[str]:
    return [record.original for record in batch.records]


class Followed:
    """A real file and the `TailedFile` that follows it through an open descriptor."""

    def __init__(
        self, path: Path, first: bytes, tailed_file: Callable[[FileIdentity], TailedFile]
    ) -> None:
        self.path = path
        path.write_bytes(first)
        self.fd = os.open(path, os.O_RDONLY)
        identity = identify(self.fd, os.fstat(self.fd), 256)
        assert identity is not None
        self.tailed = tailed_file(identity)
        self.tailed.fd = self.fd

    def append(self, data: bytes) -> None:
        with self.path.open("ab") as handle:
            handle.write(data)

    def read(self, chunk_bytes: int = 1 << 16) -> ReadBatch:
        batch = self.tailed.read(chunk_bytes)
        assert batch is not None, "nothing was read"
        return batch


Follow = Callable[..., Followed]


@pytest.fixture
def follow(tmp_path: Path) -> Iterator[Follow]:
    """Write `first` to a new file and follow it; every descriptor is closed after the test."""
    opened: list[Followed] = []

    def make(
        first: bytes,
        name: str = f"plog-{PID}_20250914093300000.log",
        limits: ParseLimits | None = None,
        start: int = 0,
        journal_from: int = 0,
    ) -> Followed:
        path = tmp_path / name

        def tailed_file(identity: FileIdentity) -> TailedFile:
            return TailedFile(
                str(path),
                identity,
                CLOCK,
                limits or ParseLimits(),
                "node-1",
                start=start,
                journal_from=journal_from,
            )

        followed = Followed(path, first, tailed_file)
        opened.append(followed)
        return followed

    yield make
    for followed in opened:
        os.close(followed.fd)


def test_whole_lines_become_records_and_the_read_reaches_the_end_of_the_last_line(
    follow: Follow,
) -> None:
    """The parser holds the last record (a continuation line may follow): it is handed on by
    `flush_assembled`, and then the checkpoint is the end of the last whole line."""
    data = line(0) + line(1) + line(2)
    assert len(data) == 225
    followed = follow(data)
    batch = followed.read()
    assert originals(batch) == [plog_line(PID, 0), plog_line(PID, 1)]
    assert [(r.offset, r.end_offset) for r in batch.records] == [(0, 75), (75, 150)]
    assert batch.bytes_read == 225
    assert batch.lines_read == 3
    assert followed.tailed.position == 225
    assert batch.offset == 150  # where the third record, still being assembled, starts
    last = followed.tailed.flush_assembled()
    assert last is not None
    assert originals(last) == [plog_line(PID, 2)]
    assert last.offset == len(data) == 225
    assert followed.tailed.read(1 << 16) is None


def test_a_partial_last_line_waits_and_counts_in_the_position_but_not_in_the_checkpoint(
    follow: Follow,
) -> None:
    third = line(2)
    followed = follow(line(0) + line(1) + third[:30])
    batch = followed.read()
    assert originals(batch) == [plog_line(PID, 0)]
    assert followed.tailed.partial == third[:30]
    assert followed.tailed.position == 180
    assert batch.offset == 75
    assembled = followed.tailed.flush_assembled()
    assert assembled is not None
    assert originals(assembled) == [plog_line(PID, 1)]
    assert assembled.offset == 150  # not 180: the partial line is in no record
    assert followed.tailed.partial == third[:30]


def test_a_partial_line_becomes_one_record_once_its_line_end_arrives(follow: Follow) -> None:
    third = line(2)
    followed = follow(line(0) + line(1) + third[:30])
    followed.read()
    followed.append(third[30:] + line(3))
    batch = followed.read()
    assert originals(batch) == [plog_line(PID, 1), plog_line(PID, 2)]
    assert [(r.offset, r.end_offset) for r in batch.records] == [(75, 150), (150, 225)]
    assert batch.records[1].flags & Flag.INCOMPLETE == 0
    assert batch.offset == 225
    assert followed.tailed.partial == b""
    assert followed.tailed.position == 300


def test_an_idle_flush_hands_on_the_assembled_record_and_the_partial_line_flagged_incomplete(
    follow: Follow,
) -> None:
    second = line(1)
    followed = follow(line(0) + second[:40])
    followed.read()
    batch = followed.tailed.flush_idle()
    assert originals(batch) == [plog_line(PID, 0), second[:40].decode()]
    assert batch.records[0].flags & Flag.INCOMPLETE == 0
    assert batch.records[1].flags & Flag.INCOMPLETE
    assert [(r.offset, r.end_offset) for r in batch.records] == [(0, 75), (75, 115)]
    assert batch.offset == 115
    assert followed.tailed.partial == b""
    assert not followed.tailed.holds_data


def test_an_idle_flush_without_a_partial_line_hands_on_the_assembled_record_unflagged(
    follow: Follow,
) -> None:
    followed = follow(line(0) + line(1))
    followed.read()
    batch = followed.tailed.flush_idle()
    assert originals(batch) == [plog_line(PID, 1)]
    assert batch.records[0].flags & Flag.INCOMPLETE == 0
    assert batch.offset == 150


def test_an_idle_flush_with_nothing_held_hands_on_no_record(follow: Follow) -> None:
    followed = follow(line(0))
    followed.read()
    followed.tailed.flush_idle()
    batch = followed.tailed.flush_idle()
    assert batch.records == []
    assert batch.offset == 75


def test_an_over_long_line_keeps_its_first_bytes_flagged_truncated_with_bounded_memory(
    follow: Follow,
) -> None:
    """Written without its line end at first, and read 64 bytes at a time: the file holds far
    more than the cap, the tailed file never more than the cap and one byte."""
    limits = ParseLimits(max_line_bytes=100)
    long = line(0, text="x" * 1000)
    followed = follow(long[:700], limits=limits)
    while followed.tailed.read(64) is not None:
        assert len(followed.tailed.partial) <= 101
    assert followed.tailed.position == 700
    followed.append(long[700:] + line(1))
    records = []
    while (batch := followed.tailed.read(64)) is not None:
        assert len(followed.tailed.partial) <= 101
        records.extend(batch.records)
    assembled = followed.tailed.flush_assembled()
    assert assembled is not None
    records.extend(assembled.records)
    assert len(records) == 2
    assert records[0].original == long[:100].decode()
    assert records[0].flags & Flag.TRUNCATED
    assert (records[0].offset, records[0].end_offset) == (0, len(long))
    assert records[1].original == plog_line(PID, 1)
    assert records[1].flags & Flag.TRUNCATED == 0
    assert (records[1].offset, records[1].end_offset) == (len(long), len(long) + 75)
    assert assembled.offset == len(long) + 75


def test_the_rest_of_an_over_long_line_is_skipped_up_to_its_line_end(follow: Follow) -> None:
    limits = ParseLimits(max_line_bytes=100)
    long = line(0, text="x" * 1000)
    followed = follow(long[:500], limits=limits)
    first = followed.read(500)
    assert first.records == []
    assert followed.tailed.skipping
    assert followed.tailed.position == 500
    assert first.offset == 0
    followed.append(long[500:] + line(1))
    batch = followed.read(1 << 16)
    assert [r.original for r in batch.records] == [long[:100].decode()]
    assert batch.records[0].end_offset == len(long)  # where its line ends, not where it was cut
    assert batch.bytes_read == len(long) - 500 + 75
    assert not followed.tailed.skipping
    assert followed.tailed.position == len(long) + 75
    assert batch.offset == len(long)  # the next line's record is being assembled


def test_an_over_long_partial_line_flushed_when_idle_is_truncated_and_incomplete(
    follow: Follow,
) -> None:
    limits = ParseLimits(max_line_bytes=100)
    long = line(0, text="x" * 1000)
    followed = follow(long[:600], limits=limits)
    followed.read(600)
    batch = followed.tailed.flush_idle()
    assert originals(batch) == [long[:100].decode()]
    assert batch.records[0].flags & Flag.TRUNCATED
    assert batch.records[0].flags & Flag.INCOMPLETE
    assert (batch.records[0].offset, batch.records[0].end_offset) == (0, 600)
    assert batch.offset == 600
    assert followed.tailed.position == 600


def test_a_multi_line_record_is_assembled_while_the_checkpoint_stays_at_its_start(
    follow: Follow,
) -> None:
    """A header line, then continuation lines written one at a time: one record, handed on when
    the next header comes; until then every checkpoint is the start of the header line."""
    header = line(1, text="aclnnAdd failed, stack:")
    frames = [
        f"    #{depth} 0x7f00{depth:04x} in aclnnAdd () from libopapi.so\n".encode()
        for depth in range(3)
    ]
    followed = follow(line(0) + header + frames[0])
    batch = followed.read()
    assert originals(batch) == [plog_line(PID, 0)]
    assert batch.offset == 75
    for frame in frames[1:]:
        followed.append(frame)
        batch = followed.read()
        assert batch.records == []
        assert batch.offset == 75
    end = 75 + len(header) + sum(map(len, frames))
    assert followed.tailed.position == end
    followed.append(line(2))
    batch = followed.read()
    assert len(batch.records) == 1
    record = batch.records[0]
    assert record.original == (header + b"".join(frames)).decode().rstrip("\n")
    assert record.line_count == 4
    assert (record.offset, record.end_offset) == (75, end)
    assert batch.offset == end  # where the next record, now being assembled, starts


def test_flushing_the_assembled_record_leaves_a_partial_line_unread(follow: Follow) -> None:
    second = line(1)
    followed = follow(line(0) + second[:20])
    followed.read()
    batch = followed.tailed.flush_assembled()
    assert batch is not None
    assert originals(batch) == [plog_line(PID, 0)]
    assert batch.offset == 75
    assert followed.tailed.partial == second[:20]
    assert followed.tailed.flush_assembled() is None
    followed.append(second[20:])
    later = followed.read()
    assert later.records == []
    assert later.offset == 75
    assembled = followed.tailed.flush_assembled()
    assert assembled is not None
    assert originals(assembled) == [plog_line(PID, 1)]
    assert [(r.offset, r.end_offset) for r in assembled.records] == [(75, 150)]


def test_a_file_followed_from_a_checkpoint_is_read_from_that_byte_on(follow: Follow) -> None:
    followed = follow(line(0) + line(1) + line(2), start=75)
    assert followed.tailed.position == 75
    batch = followed.read()
    assert batch.bytes_read == 150
    assert originals(batch) == [plog_line(PID, 1)]
    assert batch.records[0].offset == 75
    assembled = followed.tailed.flush_assembled()
    assert assembled is not None
    assert [(r.offset, r.end_offset) for r in assembled.records] == [(150, 225)]
    assert assembled.offset == 225


def test_records_before_the_journal_offset_are_marked_for_replay_until_the_read_passes_it(
    follow: Follow,
) -> None:
    """After a restart with events waiting for context, reading starts at `replay_from` (0 here)
    and the records up to `journal_from` (150, the third line) are already journaled."""
    followed = follow(line(0) + line(1) + line(2) + line(3), journal_from=150)
    first = followed.read(150)
    assert originals(first) == [plog_line(PID, 0)]
    assert first.offset == 75
    assert first.journal_from == 150
    assert followed.tailed.journal_from == 150
    second = followed.read(150)
    assert originals(second) == [plog_line(PID, 1), plog_line(PID, 2)]
    assert second.offset == 225
    assert second.journal_from == 150  # the record at 75 is replayed, the one at 150 is new
    assert followed.tailed.journal_from == 0
    followed.append(line(4))
    third = followed.read()
    assert originals(third) == [plog_line(PID, 3)]
    assert third.journal_from == 0


def test_a_file_name_that_is_not_utf8_is_shown_with_its_odd_bytes_escaped(
    follow: Follow, tmp_path: Path
) -> None:
    name = os.fsdecode(b"plog-7_2025091409330\xff000.log")
    followed = follow(line(0), name=name)
    assert shown_path(str(tmp_path / name)) == f"{tmp_path}/plog-7_2025091409330\\xff000.log"
    assert followed.tailed.shown == shown_path(str(tmp_path / name))
    batch = followed.read()
    assert batch.path == followed.tailed.shown
    assert batch.source.path == followed.tailed.shown
    batch.path.encode("utf-8")  # writable anywhere


def test_a_utf8_file_name_is_shown_as_it_is() -> None:
    assert shown_path("/logs/debug/plog/日志-4100.log") == "/logs/debug/plog/日志-4100.log"


def test_the_read_mark_holds_the_last_bytes_fed_to_the_parser(follow: Follow) -> None:
    """A fingerprint's worth (256 bytes) ending where the parsed bytes end, not at a partial
    line; a short file's mark holds all it has, gathered over several reads."""
    third = line(2)
    followed = follow(line(0))
    first = followed.read()
    assert first.mark == mark_of(line(0), 75)
    followed.append(line(1) + third[:30])
    second = followed.read()
    assert second.mark == mark_of(line(0) + line(1), 150)
    followed.append(third[30:] + b"".join(line(number) for number in range(3, 8)))
    last = followed.read()
    whole = followed.path.read_bytes()
    assert len(whole) == 600
    assert last.mark == mark_of(whole[600 - 256 :], 600)
    assert last.mark.found_in(followed.fd, 600)


@pytest.mark.parametrize("chunk_bytes", [64, 700, 1 << 16])
def test_an_over_long_line_ends_where_its_line_ends_however_it_was_read(
    chunk_bytes: int, follow: Follow
) -> None:
    limits = ParseLimits(max_line_bytes=100)
    long = line(0, text="x" * 1000)
    followed = follow(long + line(1), limits=limits)
    records = []
    while (batch := followed.tailed.read(chunk_bytes)) is not None:
        records.extend(batch.records)
    records.extend(followed.tailed.flush_idle().records)
    assert [(r.offset, r.end_offset) for r in records] == [
        (0, len(long)),
        (len(long), len(long) + 75),
    ]


def test_an_over_long_continuation_line_stretches_its_record_to_its_line_end(
    follow: Follow,
) -> None:
    limits = ParseLimits(max_line_bytes=100)
    continuation = b"    at " + b"y" * 900 + b"\n"
    followed = follow(line(0) + continuation + line(1), limits=limits)
    records = []
    while (batch := followed.tailed.read(64)) is not None:
        records.extend(batch.records)
    records.extend(followed.tailed.flush_idle().records)
    assert [(r.offset, r.end_offset) for r in records] == [
        (0, 75 + len(continuation)),
        (75 + len(continuation), 75 + len(continuation) + 75),
    ]


def test_each_batch_says_the_line_number_of_its_first_record_from_the_file_s_start(
    follow: Follow,
) -> None:
    """Line numbers count continuation lines too (a record of three lines takes three), as the
    file's own lines are numbered: what evidence says as FILE:LINE."""
    block = plog_line(PID, 1, level="ERROR", text="failed") + "\n  detail one\n  detail two\n"
    followed = follow(line(0) + block.encode())
    first = followed.read()
    assert (first.first_line, originals(first)) == (1, [plog_line(PID, 0)])
    followed.append(line(2) + line(3))
    second = followed.read()
    assert second.first_line == 2
    assert [r.original.split("\n")[0] for r in second.records] == [
        plog_line(PID, 1, level="ERROR", text="failed"),
        plog_line(PID, 2),
    ]
    last = followed.tailed.flush_assembled()
    assert last is not None and last.first_line == 6  # 1 + 1 + 3 + 1
    assert originals(last) == [plog_line(PID, 3)]


def test_a_file_followed_from_a_checkpoint_inside_it_has_no_line_numbers(follow: Follow) -> None:
    data = line(0) + line(1) + line(2)
    followed = follow(data, start=75)  # the lines before the checkpoint were not counted
    batch = followed.read()
    assert batch.records and batch.first_line is None
