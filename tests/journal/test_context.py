"""Context for `grep -C`: the records around a hit, from its file, across its blocks."""

from __future__ import annotations

import re
from contextlib import closing
from pathlib import Path

from npuwatch.journal.context import ContextReader
from npuwatch.journal.query import search
from npuwatch.journal.question import Hit, Question
from npuwatch.journal.rows import StoredRecord
from tests.journal.journal_builder import LogFile, cann_line, epoch_us, write_journal

T0 = epoch_us("2025-09-14T09:30:00")
PLOG = "/r/debug/plog/plog-3300_20250914093000120.log"
DEVICE_LOG = "/r/debug/device-0/device-3300_20250914093000120.log"


def plog(count: int, errors: tuple[int, ...] = ()) -> LogFile:
    """A plog of `count` records, "plog record N", at the levels asked; record 4 has two lines."""
    lines = []
    for number in range(count):
        level = "ERROR" if number in errors else "INFO"
        when = T0 + number * 1_000_000
        body = f"[ge.cc:{number}]3301 Run: plog record {number}"
        lines.append(cann_line(level, "GE", 3300, when, body))
        if number == 4:
            lines.append("    second line of plog record 4")
    return LogFile(PLOG, "node-a", lines)


def device_log(count: int) -> LogFile:
    """A device log of `count` records, "device record N", written between the plog's."""
    lines = []
    for number in range(count):
        when = T0 + number * 1_000_000 + 500
        body = f"[rt.cc:{number}]3302 Sync: device record {number}"
        lines.append(cann_line("INFO", "RUNTIME", 3300, when, body))
    return LogFile(DEVICE_LOG, "node-a", lines)


def hit_on(directory: Path, number: int) -> Hit:
    """The hit for plog record `number`, found by reading blocks."""
    question = Question(pattern=re.compile(f"plog record {number}$", re.MULTILINE))
    (hit,) = search(directory, question)
    return hit


def numbers(records: list[StoredRecord]) -> list[int]:
    """Which records these are: the number each says ("plog record 7" -> 7)."""
    found = []
    for record in records:
        match = re.search(r"(plog|device) record (\d+)", record.original)
        assert match is not None
        assert match[1] == "plog", "a neighbour from another file"
        found.append(int(match[2]))
    return found


def around(directory: Path, hit: Hit, before: int, after: int) -> tuple[list[int], list[int]]:
    with closing(ContextReader(directory)) as reader:
        earlier, later = reader.around(hit, before, after)
    return numbers(earlier), numbers(later)


def test_neighbours_come_from_the_same_file_only(tmp_path: Path) -> None:
    # One record of each file per commit: the plog's blocks and the device log's alternate.
    write_journal(tmp_path, [plog(12), device_log(12)], runs=12, events=[])
    assert around(tmp_path, hit_on(tmp_path, 6), 2, 2) == ([4, 5], [7, 8])


def test_context_crosses_block_boundaries_within_a_segment(tmp_path: Path) -> None:
    write_journal(tmp_path, [plog(12), device_log(12)], runs=4, events=[])  # 3 records a block
    first_of_a_block, last_of_a_block = hit_on(tmp_path, 6), hit_on(tmp_path, 5)
    assert first_of_a_block.position == 0 and last_of_a_block.position == 2
    assert around(tmp_path, first_of_a_block, 4, 1) == ([2, 3, 4, 5], [7])
    assert around(tmp_path, last_of_a_block, 1, 4) == ([4], [6, 7, 8, 9])


def test_context_crosses_segments_when_the_journal_rolled_in_between(tmp_path: Path) -> None:
    """The journal rolls daily and by size: a hit just after midnight keeps its context."""
    write_journal(tmp_path, [plog(12), device_log(12)], runs=12, segments=3)  # 4 per segment
    first_of_the_second, last_of_the_first = hit_on(tmp_path, 4), hit_on(tmp_path, 3)
    assert first_of_the_second.segment == last_of_the_first.segment + 1
    assert around(tmp_path, first_of_the_second, 3, 1) == ([1, 2, 3], [5])
    assert around(tmp_path, last_of_the_first, 1, 6) == ([2], [4, 5, 6, 7, 8, 9])
    assert around(tmp_path, hit_on(tmp_path, 10), 9, 5) == (list(range(1, 10)), [11])


def test_context_reaches_over_more_blocks_than_it_keeps_decoded(tmp_path: Path) -> None:
    write_journal(tmp_path, [plog(30), device_log(30)], runs=30, events=[])
    assert around(tmp_path, hit_on(tmp_path, 15), 12, 12) == (
        list(range(3, 15)),
        list(range(16, 28)),
    )


def test_context_stops_at_the_first_record_of_the_file(tmp_path: Path) -> None:
    write_journal(tmp_path, [device_log(6), plog(6)], runs=6, events=[])
    assert around(tmp_path, hit_on(tmp_path, 1), 5, 1) == ([0], [2])
    assert around(tmp_path, hit_on(tmp_path, 0), 5, 1) == ([], [1])


def test_context_stops_at_the_last_record_of_the_file(tmp_path: Path) -> None:
    write_journal(tmp_path, [plog(6), device_log(9)], runs=3, events=[])
    assert around(tmp_path, hit_on(tmp_path, 4), 1, 5) == ([3], [5])
    assert around(tmp_path, hit_on(tmp_path, 5), 1, 5) == ([4], [])


def test_a_multi_line_record_is_one_neighbour_with_all_its_lines(tmp_path: Path) -> None:
    write_journal(tmp_path, [plog(8)], runs=8, events=[])
    with closing(ContextReader(tmp_path)) as reader:
        earlier, _ = reader.around(hit_on(tmp_path, 5), 1, 0)
    assert earlier[0].original.endswith("plog record 4\n    second line of plog record 4")


def test_a_hit_from_the_index_has_the_same_context_as_one_from_blocks(tmp_path: Path) -> None:
    write_journal(tmp_path, [plog(12, errors=(3, 7)), device_log(12)], runs=5, events=[])
    from_index = list(search(tmp_path, Question(levels=frozenset({"ERROR"}))))
    assert Question(levels=frozenset({"ERROR"})).indexed
    assert [around(tmp_path, hit, 2, 2) for hit in from_index] == [
        around(tmp_path, hit_on(tmp_path, 3), 2, 2),
        around(tmp_path, hit_on(tmp_path, 7), 2, 2),
    ]
    assert around(tmp_path, from_index[0], 2, 2) == ([1, 2], [4, 5])
