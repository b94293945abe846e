"""The RELIABILITY.md scenarios for tailing and the journal, each with exact line counts.

Every test writes log lines that carry their own sequence number, runs the real agent (its
reader, rules and journal threads) on a temporary tree, and compares the multiset of lines in the
journal with the multiset written: nothing lost, nothing twice.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from npuwatch.records import Flag
from tests.agent.harness import Harness, append, held_open, plog_line, plog_path, wait_until


def lines_of(pid: int, start: int, count: int, level: str = "INFO") -> list[str]:
    return [plog_line(pid, number, level) for number in range(start, start + count)]


def write_in_place(path: Path, lines: list[str]) -> None:
    """Write `lines` over the file's content, keeping its inode (what a reused inode holds)."""
    inode = path.stat().st_ino
    with path.open("r+", encoding="utf-8") as handle:
        handle.write("".join(line + "\n" for line in lines))
        handle.truncate()
    assert path.stat().st_ino == inode


def test_a_burst_of_new_files_is_found_by_the_rescan_when_no_file_event_comes(
    tmp_path: Path,
) -> None:
    """#1: with file events off (as after an inotify overflow), the rescan finds every file."""
    harness = Harness(tmp_path, watch=False)
    harness.start()
    written: list[str] = []
    for pid in range(200, 260):
        lines = lines_of(pid, 0, 50)
        append(plog_path(harness.logs, pid), lines)
        written += lines
    got = harness.wait_for_lines(Counter(written))
    harness.stop()
    assert got == Counter(written)


def test_a_file_rotated_while_being_read_is_read_to_its_end_and_the_new_one_from_its_start(
    tmp_path: Path,
) -> None:
    """#2: CANN rotates by starting a new file; the writer goes on there."""
    harness = Harness(tmp_path)
    first = plog_path(harness.logs, 300, stamp=1)
    old = lines_of(300, 0, 20_000)
    append(first, old)
    harness.start()
    second = plog_path(harness.logs, 300, stamp=2)
    new = lines_of(300, 20_000, 5_000)
    append(second, new)
    tail = lines_of(300, 25_000, 10)
    append(first, tail)  # a last write that raced with the rotation
    got = harness.wait_for_lines(Counter(old + new + tail))
    harness.stop()
    assert got == Counter(old + new + tail)


def test_a_file_truncated_and_written_again_has_its_new_content_read_once(
    tmp_path: Path,
) -> None:
    """#3: truncated in place and rewritten: told apart by size and fingerprint."""
    harness = Harness(tmp_path)
    path = plog_path(harness.logs, 400)
    before = lines_of(400, 0, 300)
    append(path, before)
    harness.start()
    harness.wait_for_lines(Counter(before))
    after = lines_of(401, 0, 100)  # different first bytes, shorter than before
    path.write_text("".join(line + "\n" for line in after), encoding="utf-8")
    got = harness.wait_for_lines(Counter(before + after))
    harness.stop()
    assert got == Counter(before + after)


def test_a_truncated_file_rewritten_longer_with_the_same_first_line_is_read_again(
    tmp_path: Path,
) -> None:
    """#3 again, the hard case: the size alone does not show it, the fingerprint does not
    either (same first line); the file is fingerprinted over more than the first line."""
    harness = Harness(tmp_path)
    path = plog_path(harness.logs, 410)
    first = plog_line(410, 0)
    before = [first, *lines_of(410, 1, 20)]
    append(path, before)
    harness.start()
    harness.wait_for_lines(Counter(before))
    harness.stop()
    after = [first, *lines_of(410, 1000, 400)]
    path.write_text("".join(line + "\n" for line in after), encoding="utf-8")
    harness.start()
    got = harness.wait_for_lines(Counter(before + after))
    harness.stop()
    assert got == Counter(before + after)


def test_rotation_while_the_agent_is_stopped_neither_rereads_nor_skips(tmp_path: Path) -> None:
    """#4: lines added to the old file and a new file, both while stopped."""
    harness = Harness(tmp_path)
    first = plog_path(harness.logs, 500, stamp=1)
    early = lines_of(500, 0, 1000)
    append(first, early)
    harness.start()
    harness.wait_for_lines(Counter(early))
    harness.stop()
    late = lines_of(500, 1000, 200)
    append(first, late)
    second = plog_path(harness.logs, 500, stamp=2)
    new = lines_of(500, 1200, 300)
    append(second, new)
    harness.start()
    got = harness.wait_for_lines(Counter(early + late + new))
    harness.stop()
    assert got == Counter(early + late + new)


def test_a_line_longer_than_the_cap_is_cut_and_flagged_and_the_offset_survives_a_restart(
    tmp_path: Path,
) -> None:
    """#5: a 300 KiB line with a 4 KiB cap."""
    harness = Harness(tmp_path, max_line_bytes=4096, read_chunk_bytes=65536)
    path = plog_path(harness.logs, 600)
    head = lines_of(600, 0, 3)
    giant = plog_line(600, 3) + " " + "x" * 300_000
    append(path, [*head, giant])
    harness.start()
    wait_until(lambda: sum(1 for _ in harness.records()) == 4)
    harness.stop()
    tail = lines_of(600, 4, 3)
    append(path, tail)
    harness.start()
    wait_until(lambda: sum(1 for _ in harness.records()) == 7)
    harness.stop()
    records = list(harness.records())
    assert [r.original for r in records[:3]] == head
    assert records[3].original == giant[:4096]
    assert records[3].flags & Flag.TRUNCATED
    assert [r.original for r in records[4:]] == tail


def test_a_partial_last_line_waits_for_its_end_across_a_restart(tmp_path: Path) -> None:
    """#6: the line is completed after the restart, and journaled once, whole."""
    harness = Harness(tmp_path, idle_flush=30.0)
    path = plog_path(harness.logs, 700)
    whole = lines_of(700, 0, 5)
    partial = plog_line(700, 5)
    path.write_text("".join(line + "\n" for line in whole) + partial[:40], encoding="utf-8")
    harness.start()
    # The fifth record is held while the agent runs (a continuation line may still come, and
    # the idle timeout is long); the stop hands it on, but not the partial line after it: the
    # checkpoint stays at the partial line's start, so the restart reads it again.
    harness.wait_for_lines(Counter(whole[:4]))
    harness.stop()
    assert harness.lines() == Counter(whole)
    following = plog_line(700, 6)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(partial[40:] + "\n" + following + "\n")
    harness.start()
    got = harness.wait_for_lines(Counter([*whole, partial]))
    harness.stop()
    assert got == Counter([*whole, partial])  # `following` waits while the agent runs
    assert harness.lines() == Counter([*whole, partial, following])  # and is handed on at the stop


def test_a_partial_last_line_is_flushed_flagged_after_the_idle_timeout(tmp_path: Path) -> None:
    """#6: a line that never gets its end is not held forever, and not lost."""
    harness = Harness(tmp_path, idle_flush=0.3)
    path = plog_path(harness.logs, 710)
    whole = lines_of(710, 0, 3)
    partial = plog_line(710, 3)[:50]
    path.write_text("".join(line + "\n" for line in whole) + partial, encoding="utf-8")
    harness.start()
    wait_until(lambda: sum(1 for _ in harness.records()) == 4)
    harness.stop()
    last = list(harness.records())[-1]
    assert last.original == partial
    assert last.flags & Flag.INCOMPLETE


def test_an_inode_that_now_holds_another_file_is_a_new_file(tmp_path: Path) -> None:
    """#9: the inode of a file the agent has a checkpoint for comes back with other content
    (a deleted file's inode reused by the next one, as ext4 does; here made certain by writing
    the new content into the same inode while the agent is stopped). It is larger than the
    checkpoint's offset, so only the fingerprint can tell: no offset may be carried over."""
    harness = Harness(tmp_path)
    path = plog_path(harness.logs, 800)
    first = lines_of(800, 0, 500)
    append(path, first)
    harness.start()
    harness.wait_for_lines(Counter(first))
    harness.stop()
    second = lines_of(801, 0, 700)
    write_in_place(path, second)
    harness.start()
    got = harness.wait_for_lines(Counter(first + second))
    harness.stop()
    assert got == Counter(first + second)


def test_two_files_starting_with_the_same_line_are_both_read(tmp_path: Path) -> None:
    """#10."""
    harness = Harness(tmp_path)
    same = plog_line(900, 0)
    one = [same, *lines_of(900, 1, 50)]
    two = [same, *lines_of(901, 1, 60)]
    append(plog_path(harness.logs, 900), one)
    append(plog_path(harness.logs, 901), two)
    harness.start()
    got = harness.wait_for_lines(Counter(one + two))
    harness.stop()
    assert got == Counter(one + two)


def test_a_short_file_after_a_long_one_at_the_same_path_starts_at_zero(tmp_path: Path) -> None:
    """#11: the long file's offset must not be carried over to the short one."""
    harness = Harness(tmp_path)
    path = plog_path(harness.logs, 1000)
    long = lines_of(1000, 0, 2000)
    append(path, long)
    harness.start()
    harness.wait_for_lines(Counter(long))
    harness.stop()
    path.unlink()
    short = lines_of(1001, 0, 3)
    append(path, short)
    harness.start()
    got = harness.wait_for_lines(Counter(long + short))
    harness.stop()
    assert got == Counter(long + short)


def test_a_slowly_written_multi_line_record_is_one_record(tmp_path: Path) -> None:
    """#12: 500 continuation lines written in pieces with pauses shorter than the idle
    timeout make one record; the last record, without a newline, is flushed when idle."""
    harness = Harness(tmp_path, idle_flush=1.5)
    path = plog_path(harness.logs, 1100)
    head = plog_line(1100, 0, "ERROR", "dump follows")
    continuation = [f"    register x{index:03d} = 0x{index:08x}" for index in range(500)]
    append(path, [head])
    harness.start()
    for start in range(0, 500, 50):
        append(path, continuation[start : start + 50])
        wait_until(lambda: True, 0.1)
    last = plog_line(1100, 1, "INFO", "after")
    with path.open("a", encoding="utf-8") as handle:
        handle.write(last)  # no newline: flushed by the idle timeout
    wait_until(lambda: sum(1 for _ in harness.records()) == 2, 20)
    harness.stop()
    records = list(harness.records())
    assert records[0].original == "\n".join([head, *continuation])
    assert records[1].original == last


def test_a_deleted_file_still_open_is_read_to_its_end_and_released(tmp_path: Path) -> None:
    """#15 and #20: a file deleted while held open loses nothing; its descriptor is released
    within the grace time; a file deleted before it was ever read is counted."""
    harness = Harness(tmp_path, deleted_grace=1.0)
    path = plog_path(harness.logs, 1200)
    first = lines_of(1200, 0, 100)
    append(path, first)
    agent = harness.start()
    harness.wait_for_lines(Counter(first))
    with path.open("a", encoding="utf-8") as handle:
        more = lines_of(1200, 100, 50)
        handle.write("".join(line + "\n" for line in more))
        path.unlink()  # CANN deletes the oldest file; the agent still holds it open
    got = harness.wait_for_lines(Counter(first + more))
    wait_until(lambda: agent.metrics.value("npuwatch_files_open") == 0, 10)
    harness.stop()
    assert got == Counter(first + more)
    assert harness.metrics.value("npuwatch_files_deleted_unread_total") == 0


def test_a_record_held_when_the_agent_stops_is_journaled_so_a_deletion_before_the_start_loses_nothing(
    tmp_path: Path,
) -> None:
    """#8 with CANN's rotation: the last record of a file waits for what may follow it; a stop
    hands it on, so that a file deleted while no agent runs keeps its last line."""
    harness = Harness(tmp_path, idle_flush=30.0)
    path = plog_path(harness.logs, 1300)
    first = lines_of(1300, 0, 10)
    append(path, first)
    harness.start()
    harness.wait_for_lines(Counter(first[:9]))  # the last record waits for what follows it
    harness.stop()
    assert harness.lines() == Counter(first)
    path.unlink()
    harness.start()  # returns after the first rescan, which looks for the checkpoints' files
    harness.stop()
    assert harness.lines() == Counter(first)
    assert harness.metrics.value("npuwatch_files_deleted_unread_total") == 0


def test_a_partial_line_held_when_the_agent_stopped_and_then_deleted_is_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """#20: the checkpoint left at the stop shows bytes not yet journaled (a line without its
    end); when the file is gone at the next start, they are counted, not silently dropped, as
    a lower bound (the file may have grown while no agent ran)."""
    harness = Harness(tmp_path, idle_flush=30.0)
    path = plog_path(harness.logs, 1300)
    first = lines_of(1300, 0, 10)
    partial = plog_line(1300, 10)[:50]
    path.write_text("".join(line + "\n" for line in first) + partial, encoding="utf-8")
    harness.start()
    harness.wait_for_lines(Counter(first[:9]))
    harness.stop()
    path.unlink()
    harness.start()
    wait_until(lambda: harness.metrics.value("npuwatch_files_deleted_unread_total") == 1)
    harness.stop()
    assert harness.lines() == Counter(first)
    assert harness.metrics.value("npuwatch_deleted_unread_bytes_total") == len(partial)
    assert f"at least {len(partial)} bytes unread" in caplog.text


def test_every_file_that_came_and_went_is_either_journaled_or_counted(tmp_path: Path) -> None:
    """#20: files created and deleted at once; each is read (the agent opened it in time and
    read it to its end) or counted as deleted unread: none is silent. (The folder exists: a
    file created and deleted in a folder too new to be watched yet cannot be seen at all.)"""
    harness = Harness(tmp_path)
    plog_path(harness.logs, 0).parent.mkdir(parents=True, exist_ok=True)
    harness.start()
    files = {}
    for pid in range(1310, 1340):
        lines = lines_of(pid, 0, 5)
        path = plog_path(harness.logs, pid)
        append(path, lines)
        path.unlink()
        files[pid] = lines

    def accounted() -> int:
        journaled = harness.lines()
        read = sum(1 for lines in files.values() if not Counter(lines) - journaled)
        counted = harness.metrics.value("npuwatch_files_deleted_unread_total")
        return read + int(counted)

    wait_until(lambda: accounted() == len(files))
    harness.stop()
    journaled = harness.lines()
    for lines in files.values():  # a file is read whole or not at all
        assert sum(journaled[line] for line in lines) in (0, len(lines))
    assert accounted() == len(files)


def test_unreadable_files_folders_and_link_loops_are_skipped_and_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """#22: the agent keeps running and reads everything else."""
    harness = Harness(tmp_path)
    good = lines_of(1400, 0, 20)
    append(plog_path(harness.logs, 1400), good)
    locked = plog_path(harness.logs, 1401)
    append(locked, lines_of(1401, 0, 5))
    locked.chmod(0)
    (harness.logs / "debug" / "plog" / "plog-1402_20250914093300000.log").mkdir()
    loop = harness.logs / "debug" / "loop.log"
    loop.symlink_to(loop)
    expected = Counter(good)
    if os.geteuid() == 0:  # root reads a mode-0 file anyway
        expected += Counter(lines_of(1401, 0, 5))
    try:
        harness.start()
        harness.wait_for_lines(expected)
        harness.stop()
    finally:
        locked.chmod(0o644)
    assert harness.lines() == expected
    problems = harness.metrics.value
    assert problems("npuwatch_source_problems_total", {"reason": "link_not_followed"}) == 1
    if os.geteuid() != 0:
        assert problems("npuwatch_source_problems_total", {"reason": "unreadable"}) >= 1


def test_binary_garbage_and_foreign_encodings_are_flagged_and_kept(tmp_path: Path) -> None:
    """#23: NUL bytes, invalid UTF-8 and GBK text become flagged records; nothing escapes."""
    harness = Harness(tmp_path)
    path = plog_path(harness.logs, 1500)
    good = plog_line(1500, 0)
    gbk = plog_line(1500, 1, "ERROR", "设备异常").encode("gbk")
    payload = good.encode() + b"\n" + b"\x00\x01\xff\xfe garbage\n" + gbk + b"\n"
    path.write_bytes(payload)
    harness.start()
    wait_until(lambda: sum(1 for _ in harness.records()) == 2)
    harness.stop()
    records = list(harness.records())
    # The garbage has no header: it continues the record before it, escaped, and flags it.
    assert records[0].original == good + "\n" + "\x00\x01\\xff\\xfe garbage"
    assert records[0].flags & Flag.INVALID_ENCODING
    assert records[1].original == gbk.decode("gbk")
    assert records[1].flags & Flag.INVALID_ENCODING


def test_a_crash_loses_nothing_that_was_written_and_duplicates_nothing(tmp_path: Path) -> None:
    """#7/#8 in process: stop without draining (what a kill leaves), then start again."""
    harness = Harness(tmp_path)
    path = plog_path(harness.logs, 1600)
    written: list[str] = []
    harness.start()
    for round_number in range(5):
        lines = lines_of(1600, round_number * 3000, 3000)
        append(path, lines)
        written += lines
        harness.crash()
        harness.start()
    got = harness.wait_for_lines(Counter(written))
    harness.stop()
    assert got == Counter(written)


def test_more_files_than_descriptors_are_all_read_whole_through_closes_and_reopens(
    tmp_path: Path,
) -> None:
    """Bounded descriptors: twelve files written in turns through four descriptors. Files are
    closed to make room while a line is half written, reopened by identity when they grow,
    and every line is journaled once, whole."""
    harness = Harness(tmp_path, max_open_files=4, idle_flush=30.0)
    pids = range(800, 812)
    paths = {pid: plog_path(harness.logs, pid) for pid in pids}
    written: Counter[str] = Counter()
    for path in paths.values():
        path.write_text("", encoding="utf-8")
    harness.start()
    for turn in range(3):
        for pid, path in paths.items():
            lines = lines_of(pid, turn * 10, 10)
            written.update(lines[:-1])
            # The last line of the turn ends in the next turn: the file is held mid-record.
            previous = plog_line(pid, turn * 10 - 1) if turn else ""
            head = previous[40:] + "\n" if turn else ""
            with path.open("a", encoding="utf-8") as handle:
                handle.write(head + "".join(line + "\n" for line in lines[:-1]) + lines[-1][:40])
            if turn:
                written[previous] += 1
        assert harness.metrics.value("npuwatch_files_open") <= 4
    for pid, path in paths.items():
        last = plog_line(pid, 29)
        append(path, [last[40:], plog_line(pid, 30)])
        written.update([last, plog_line(pid, 30)])
    got = harness.wait_for_lines(written - Counter(plog_line(pid, 30) for pid in pids))
    # The very last line of each file is held until the idle flush or the next line; the stop
    # hands it on.
    assert got == written - Counter(plog_line(pid, 30) for pid in pids)
    harness.stop()
    assert harness.lines() == written
    harness.start()
    assert harness.metrics.value("npuwatch_files_open") <= 4
    harness.stop()


# --- defects found by a fault audit: each test failed before its fix ------------------------


def test_a_file_created_empty_is_followed_at_once_not_at_the_next_rescan(tmp_path: Path) -> None:
    """CANN opens its file, then writes: the file event comes while it is empty. With the
    rescan an hour away, only following the empty file can journal its lines."""
    harness = Harness(tmp_path, rescan_interval=3600.0)
    path = plog_path(harness.logs, 1700)
    harness.start()
    path.write_bytes(b"")
    wait_until(lambda: harness.metrics.value("npuwatch_files_open") == 1, 10)
    lines = lines_of(1700, 0, 3)
    append(path, lines)
    got = harness.wait_for_lines(Counter(lines), timeout=20)
    harness.stop()
    assert got == Counter(lines)


def test_files_rotated_faster_than_the_rescan_lose_nothing(tmp_path: Path) -> None:
    """CANN-style rotation of small files: each file is created empty, filled to about 20 KB
    and left for the next; the oldest beyond five is deleted at once, read or not. With the
    rescan an hour away, only the file events and the descriptors held from them (the agent
    reads a deleted file it holds to its end) can journal them. The test waits for the agent
    to hold each new file before writing into it: a file gone before the agent could open it
    at all is a loss it can only count (another test counts it)."""
    harness = Harness(tmp_path, rescan_interval=3600.0, deleted_grace=30.0, idle_close=3600.0)
    harness.start()
    written: list[str] = []
    live: list[Path] = []
    number = 0
    for stamp in range(40):
        path = plog_path(harness.logs, 1800, stamp=stamp)
        path.write_bytes(b"")
        live.append(path)
        wait_until(lambda: held_open(path), 20)  # noqa: B023 - waited for here, in this turn
        for _ in range(4):
            lines = lines_of(1800, number, 50)  # 200 lines of ~100 bytes: about 20 KB a file
            number += len(lines)
            append(path, lines)
            written += lines
        if len(live) > 5:
            live.pop(0).unlink()
    got = harness.wait_for_lines(Counter(written))
    harness.stop()
    assert len(written) == 8000
    assert got == Counter(written)
    assert harness.metrics.value("npuwatch_files_deleted_unread_total") == 0


def test_a_reused_inode_whose_first_bytes_match_is_read_as_a_new_file(tmp_path: Path) -> None:
    """The inode of a file read to its offset comes back holding another file that starts with
    the same bytes (more than the fingerprint) and is longer than that offset: the bytes
    before the offset are not the ones read, so it is read from its start, under a key of its
    own (its records must not take the first file's ids in the search engine)."""
    harness = Harness(tmp_path)
    path = plog_path(harness.logs, 1900)
    banner = lines_of(1900, 0, 5)  # about 500 bytes: past the 256 bytes of the fingerprint
    first = [*banner, *lines_of(1900, 5, 100)]
    append(path, first)
    harness.start()
    harness.wait_for_lines(Counter(first))
    harness.stop()
    second = [*banner, *lines_of(1901, 0, 300)]
    write_in_place(path, second)
    harness.start()
    got = harness.wait_for_lines(Counter(first + second))
    harness.stop()
    assert got == Counter(first + second)
    assert len({source.file_key for source in harness.block_sources()}) == 2


def test_a_closed_file_written_again_with_the_same_start_is_read_again(tmp_path: Path) -> None:
    """The running agent closed an idle file; it is written again in place, starting with the
    same bytes and longer than what was read. Reopened by its identity, it must not be taken
    up at the old offset."""
    harness = Harness(tmp_path, idle_close=0.5)
    path = plog_path(harness.logs, 2000)
    banner = lines_of(2000, 0, 5)
    first = [*banner, *lines_of(2000, 5, 100)]
    append(path, first)
    agent = harness.start()
    harness.wait_for_lines(Counter(first))
    wait_until(lambda: agent.metrics.value("npuwatch_files_open") == 0, 20)
    second = [*banner, *lines_of(2001, 0, 300)]
    write_in_place(path, second)
    got = harness.wait_for_lines(Counter(first + second))
    harness.stop()
    assert got == Counter(first + second)
    assert len({source.file_key for source in harness.block_sources()}) == 2


def test_a_file_name_that_is_not_utf8_is_followed_and_shown_escaped(tmp_path: Path) -> None:
    """A name with a byte that is not UTF-8 (Python keeps it as a lone surrogate, which SQLite
    refuses) is followed, journaled under its name with the byte as \\xff, and survives a
    restart."""
    harness = Harness(tmp_path)
    folder = plog_path(harness.logs, 2100).parent
    name = os.fsencode(folder) + b"/plog-2100_\xff.log"
    lines = lines_of(2100, 0, 20)
    with open(name, "wb") as handle:  # noqa: PTH123 - a bytes path
        handle.write("".join(line + "\n" for line in lines).encode())
    agent = harness.start()
    got = harness.wait_for_lines(Counter(lines))
    assert all(thread.is_alive() for thread in agent.workers)
    harness.stop()
    assert got == Counter(lines)
    assert {source.path for source in harness.block_sources()} == {f"{folder}/plog-2100_\\xff.log"}
    more = lines_of(2100, 20, 5)
    with open(name, "ab") as handle:  # noqa: PTH123
        handle.write("".join(line + "\n" for line in more).encode())
    harness.start()
    got = harness.wait_for_lines(Counter(lines + more))
    harness.stop()
    assert got == Counter(lines + more)


def test_an_empty_file_renamed_before_it_was_read_is_no_loss(tmp_path: Path) -> None:
    """A rename is not a deletion: the file is followed under its new name, nothing is
    counted as deleted unread (which would fire NpuwatchLogFilesDeletedUnread)."""
    harness = Harness(tmp_path, rescan_interval=3600.0)
    folder = plog_path(harness.logs, 2200).parent
    harness.start()
    lines = lines_of(2200, 0, 10)
    for index in range(5):
        first = folder / f"plog-2200_{index}.log"
        first.write_bytes(b"")
        renamed = folder / f"plog-2200_{index}.log.1"
        first.rename(renamed)
        append(renamed, lines[index * 2 : index * 2 + 2])
    got = harness.wait_for_lines(Counter(lines), timeout=20)
    harness.stop()
    assert got == Counter(lines)
    assert harness.metrics.value("npuwatch_files_deleted_unread_total") == 0


def test_a_link_loop_created_while_running_is_a_problem_not_a_loss(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    folder = plog_path(harness.logs, 2300).parent
    harness.start()
    (folder / "loop.log").symlink_to(folder / "loop.log")
    lines = lines_of(2300, 0, 5)
    append(plog_path(harness.logs, 2300), lines)
    harness.wait_for_lines(Counter(lines))
    wait_until(
        lambda: (
            harness.metrics.value("npuwatch_source_problems_total", {"reason": "link_not_followed"})
            == 1
        )
    )
    harness.stop()
    assert harness.metrics.value("npuwatch_files_deleted_unread_total") == 0


def test_a_folder_named_like_a_log_file_is_said_and_its_files_are_followed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    harness = Harness(tmp_path)
    folder = harness.logs / "debug" / "plog" / "plog-2400_20250914093300000.log"
    folder.mkdir(parents=True)
    lines = lines_of(2400, 0, 5)
    append(folder / "plog-2400_1.log", lines)
    harness.start()
    got = harness.wait_for_lines(Counter(lines))
    harness.stop()
    assert got == Counter(lines)
    assert (
        harness.metrics.value("npuwatch_source_problems_total", {"reason": "not_regular_file"}) == 1
    )
    assert f"skipping {folder}: a folder, not a log file" in caplog.text


def test_a_line_too_long_and_without_its_end_keeps_the_offset_where_it_starts(
    tmp_path: Path,
) -> None:
    """A 5 MB line with no newline, flushed when idle: cut to the cap, flagged, and its
    `log.offset` is the byte it starts at (not that plus the bytes dropped)."""
    harness = Harness(tmp_path)
    path = plog_path(harness.logs, 2500)
    lines = lines_of(2500, 0, 9)
    head = "".join(line + "\n" for line in lines).encode()
    long = plog_line(2500, 9).encode() + b" " + b"x" * (5 << 20)
    path.write_bytes(head + long)
    harness.start()
    wait_until(lambda: sum(1 for _ in harness.records()) == 10, 20)
    harness.stop()
    last = list(harness.records())[-1]
    assert last.offset == len(head)
    assert last.flags & Flag.TRUNCATED
    assert last.flags & Flag.INCOMPLETE
