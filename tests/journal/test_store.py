"""The journal: commits that survive a restart, segments that roll, damaged segments set aside,
retention, and a full disk that stops commits without losing or repeating any."""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from npuwatch.handoff import Checkpoint
from npuwatch.journal.block import decode_block
from npuwatch.journal.segment import Segment
from npuwatch.journal.store import (
    CommitBatch,
    Journal,
    JournalSettings,
    JournalUnavailable,
    segment_bytes_on_disk,
    segment_path,
)
from tests.journal.conftest import (
    checkpoint,
    epoch_us,
    event,
    numbered_blocks,
    open_segment_files,
    segment_files,
)
from tests.journal.full_disk import fill, small_tmpfs
from tests.journal.journal_builder import newest_sequence
from tests.journal.modes import mode_of, modes_under, umask

NOON_S = epoch_us("2025-09-14T12:00:00") / 1_000_000
DAY_S = 86_400.0


@contextmanager
def opened(
    directory: Path,
    settings: JournalSettings | None = None,
    clock: Callable[[], float] = lambda: NOON_S,
) -> Iterator[Journal]:
    journal = Journal(directory, settings, clock=clock)
    journal.open()
    try:
        yield journal
    finally:
        journal.close()


def write_segment(directory: Path, batch: CommitBatch) -> int:
    """Open the journal (a new segment), commit `batch`, close; the segment's sequence."""
    with opened(directory) as journal:
        journal.commit(batch)
        return newest_sequence(journal.directory)


def stored_checkpoints(path: Path) -> dict[str, Checkpoint]:
    segment = Segment(path, 0, readonly=True)
    try:
        return {c.file_key: c for c in segment.checkpoints()}
    finally:
        segment.close()


def stored_texts(path: Path) -> list[str]:
    """The message of every record of every block of a segment file, in order."""
    segment = Segment(path, 0, readonly=True)
    try:
        blocks = segment.blocks_after(0, 100_000)
    finally:
        segment.close()
    return [
        record.original.rsplit("]", 1)[1]
        for block in blocks
        for record in decode_block(block.payload)
    ]


def steps(first: int, count: int) -> list[str]:
    return [f"step {index} finished" for index in range(first, first + count)]


# --- restarts ---------------------------------------------------------------------------------


def test_a_new_journal_object_restores_the_checkpoints_of_the_last_commit(tmp_path: Path) -> None:
    with opened(tmp_path) as journal:
        journal.commit(CommitBatch(checkpoints=[checkpoint("a", 100), checkpoint("b", 7)]))
        journal.commit(CommitBatch(checkpoints=[checkpoint("a", 250)], forget=["b"]))
        journal.commit(CommitBatch(checkpoints=[checkpoint("c", 3)]))
    with opened(tmp_path) as journal:
        assert journal.checkpoints == {"a": checkpoint("a", 250), "c": checkpoint("c", 3)}


def test_every_open_starts_a_new_segment(tmp_path: Path) -> None:
    sequences = []
    for _ in range(3):
        with opened(tmp_path) as journal:
            sequences.append(newest_sequence(journal.directory))
            journal.commit(CommitBatch(checkpoints=[checkpoint("a", 1)]))
    assert sequences == [1, 2, 3]
    assert segment_files(tmp_path) == [f"segment-0000000{n}.db" for n in (1, 2, 3)]


def test_the_first_commit_of_a_new_segment_holds_every_checkpoint(tmp_path: Path) -> None:
    write_segment(tmp_path, CommitBatch(checkpoints=[checkpoint("a", 100), checkpoint("b", 7)]))
    write_segment(tmp_path, CommitBatch(checkpoints=[checkpoint("c", 3)]))
    assert stored_checkpoints(segment_path(tmp_path, 2)) == {
        "a": checkpoint("a", 100),
        "b": checkpoint("b", 7),
        "c": checkpoint("c", 3),
    }
    # So the newest segment alone is enough: without every older one, nothing is forgotten.
    segment_path(tmp_path, 1).unlink()
    with opened(tmp_path) as journal:
        assert set(journal.checkpoints) == {"a", "b", "c"}
        assert journal.checkpoints["a"] == checkpoint("a", 100)


def test_a_segment_created_but_never_committed_is_deleted_at_open(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_segment(tmp_path, CommitBatch(checkpoints=[checkpoint("a", 100)]))
    with opened(tmp_path):
        pass  # a crash right after the start: segment 2 has its tables and nothing else
    assert segment_files(tmp_path) == ["segment-00000001.db", "segment-00000002.db"]
    with caplog.at_level(logging.WARNING), opened(tmp_path) as journal:
        assert journal.checkpoints == {"a": checkpoint("a", 100)}
        assert journal.quarantined == 0
        assert newest_sequence(journal.directory) == 2
        assert stored_texts(segment_path(tmp_path, 2)) == []
    assert caplog.records == []
    assert not (tmp_path / "quarantine").exists()


# --- damaged segments -------------------------------------------------------------------------


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _cut_in_half(path: Path) -> None:
    with path.open("r+b") as handle:
        handle.truncate(path.stat().st_size // 2)


def _nul_in_the_middle(path: Path) -> None:
    data = bytearray(path.read_bytes())
    quarter = len(data) // 4
    data[quarter : 3 * quarter] = bytes(2 * quarter)
    path.write_bytes(bytes(data))


DAMAGE = {
    "empty": _empty,
    "cut in half": _cut_in_half,
    "NUL bytes in the middle": _nul_in_the_middle,
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_newest_segment_is_quarantined_and_the_one_before_it_is_used(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    write_segment(tmp_path, CommitBatch(numbered_blocks(0, 3), checkpoints=[checkpoint("a", 100)]))
    write_segment(tmp_path, CommitBatch(numbered_blocks(3, 3), checkpoints=[checkpoint("a", 200)]))
    DAMAGE[damage](segment_path(tmp_path, 2))
    with caplog.at_level(logging.WARNING), opened(tmp_path) as journal:
        assert journal.quarantined == 1
        assert journal.checkpoints == {"a": checkpoint("a", 100)}
        # Never the quarantined number again: a reader's position in it must not point here.
        assert newest_sequence(journal.directory) == 3
    errors = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [(r.name, r.levelname) for r in errors] == [("npuwatch.journal.store", "ERROR")]
    assert "segment-00000002.db" in errors[0].getMessage()
    assert segment_files(tmp_path) == ["segment-00000001.db", "segment-00000003.db"]
    (moved,) = segment_files(tmp_path / "quarantine")
    assert moved.startswith("segment-00000002.db.")
    assert stored_texts(segment_path(tmp_path, 1)) == steps(0, 3)


def test_an_empty_segment_is_quarantined_with_the_wal_that_holds_its_commits(
    tmp_path: Path,
) -> None:
    journal_dir, crash_image = tmp_path / "journal", tmp_path / "after-reset"
    write_segment(journal_dir, CommitBatch(checkpoints=[checkpoint("a", 100)]))
    crash_image.mkdir()
    shutil.copy(segment_path(journal_dir, 1), crash_image)
    with opened(journal_dir) as journal:
        journal.commit(CommitBatch(numbered_blocks(0, 4), checkpoints=[checkpoint("a", 200)]))
        # The files as a hard reset leaves them: the commit is in the WAL only ...
        for name in ("segment-00000002.db", "segment-00000002.db-wal"):
            shutil.copy(journal_dir / name, crash_image / name)
    wal_bytes = (crash_image / "segment-00000002.db-wal").stat().st_size
    (crash_image / "segment-00000002.db").write_bytes(b"")  # ... and the file came back empty
    with opened(crash_image) as journal:
        assert journal.quarantined == 1
        assert journal.checkpoints == {"a": checkpoint("a", 100)}
    moved = sorted(entry.name for entry in (crash_image / "quarantine").iterdir())
    assert [name.startswith("segment-00000002.db.") for name in moved] == [True, True]
    assert moved[1] == moved[0] + "-wal"
    assert (crash_image / "quarantine" / moved[1]).stat().st_size == wal_bytes


def test_sequence_numbers_keep_growing_after_a_quarantine_across_restarts(tmp_path: Path) -> None:
    write_segment(tmp_path, CommitBatch(checkpoints=[checkpoint("a", 1)]))
    write_segment(tmp_path, CommitBatch(checkpoints=[checkpoint("a", 2)]))
    _cut_in_half(segment_path(tmp_path, 2))
    with opened(tmp_path) as journal:
        first = newest_sequence(
            journal.directory
        )  # a crash before the first commit: nothing to keep
    with opened(tmp_path) as journal:
        second = newest_sequence(journal.directory)
    # The second open deletes the empty segment 3; 2 is in quarantine, and never given again.
    assert (first, second) == (3, 3)


# --- rolling ----------------------------------------------------------------------------------


def test_a_segment_past_its_size_bound_rolls_and_the_new_one_holds_every_checkpoint(
    tmp_path: Path,
) -> None:
    with opened(tmp_path, JournalSettings(segment_bytes=1)) as journal:
        journal.commit(
            CommitBatch(numbered_blocks(0, 2), checkpoints=[checkpoint("a", 1), checkpoint("b", 5)])
        )
        journal.commit(CommitBatch(numbered_blocks(2, 2), checkpoints=[checkpoint("a", 2)]))
        journal.commit(CommitBatch(numbered_blocks(4, 2), checkpoints=[checkpoint("a", 3)]))
        assert newest_sequence(journal.directory) == 3
    for sequence, offset in ((1, 1), (2, 2), (3, 3)):
        path = segment_path(tmp_path, sequence)
        assert stored_texts(path) == steps(2 * (sequence - 1), 2)
        assert stored_checkpoints(path) == {"a": checkpoint("a", offset), "b": checkpoint("b", 5)}


def test_a_segment_under_its_size_bound_takes_every_commit(tmp_path: Path) -> None:
    with opened(tmp_path) as journal:
        for first in (0, 2, 4):
            journal.commit(CommitBatch(numbered_blocks(first, 2)))
        assert newest_sequence(journal.directory) == 1
    assert stored_texts(segment_path(tmp_path, 1)) == steps(0, 6)


def test_a_new_utc_day_starts_a_new_segment(tmp_path: Path) -> None:
    now = [epoch_us("2025-09-14T23:59:58") / 1_000_000]
    with opened(tmp_path, clock=lambda: now[0]) as journal:
        journal.commit(CommitBatch(numbered_blocks(0, 1), checkpoints=[checkpoint("a", 1)]))
        now[0] += 1.5  # 23:59:59.5, the same day
        journal.commit(CommitBatch(numbered_blocks(1, 1), checkpoints=[checkpoint("a", 2)]))
        assert newest_sequence(journal.directory) == 1
        now[0] += 1.0  # 00:00:00.5 the next day
        journal.commit(CommitBatch(numbered_blocks(2, 1), checkpoints=[checkpoint("b", 9)]))
        assert newest_sequence(journal.directory) == 2
    assert stored_texts(segment_path(tmp_path, 1)) == steps(0, 2)
    assert stored_texts(segment_path(tmp_path, 2)) == steps(2, 1)
    assert stored_checkpoints(segment_path(tmp_path, 2)) == {
        "a": checkpoint("a", 2),
        "b": checkpoint("b", 9),
    }


# --- retention --------------------------------------------------------------------------------


@pytest.fixture
def four_segments(tmp_path: Path) -> Iterator[Journal]:
    """Segments 1-3 closed (a block each), segment 4 active; every file written at NOON_S."""
    for first in range(3):
        write_segment(
            tmp_path, CommitBatch(numbered_blocks(first, 1), checkpoints=[checkpoint("a", first)])
        )
    with opened(tmp_path, JournalSettings(max_age_s=30 * DAY_S)) as journal:
        journal.commit(CommitBatch(numbered_blocks(3, 1)))
        for sequence in (1, 2, 3, 4):
            os.utime(segment_path(tmp_path, sequence), (NOON_S, NOON_S))
        yield journal


def test_retention_deletes_closed_segments_older_than_the_age_bound(
    tmp_path: Path, four_segments: Journal
) -> None:
    for sequence, age_days in ((1, 31), (2, 30.5), (3, 29)):
        stamp = NOON_S - age_days * DAY_S
        os.utime(segment_path(tmp_path, sequence), (stamp, stamp))
    # Side files a reader left behind go with their segment.
    Path(f"{segment_path(tmp_path, 1)}-wal").write_bytes(b"")
    Path(f"{segment_path(tmp_path, 1)}-shm").write_bytes(b"")
    deleted = four_segments.apply_retention()
    assert deleted == [segment_path(tmp_path, 1), segment_path(tmp_path, 2)]
    assert segment_files(tmp_path) == ["segment-00000003.db", "segment-00000004.db"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("segment-00000001")]


def test_retention_deletes_the_oldest_segments_beyond_the_size_bound(
    tmp_path: Path, four_segments: Journal
) -> None:
    oldest = segment_bytes_on_disk(segment_path(tmp_path, 1))
    four_segments.settings = JournalSettings(max_bytes=four_segments.total_bytes() - oldest)
    assert four_segments.apply_retention() == [segment_path(tmp_path, 1)]
    assert segment_files(tmp_path) == [f"segment-0000000{n}.db" for n in (2, 3, 4)]


def test_retention_never_deletes_the_active_segment(tmp_path: Path, four_segments: Journal) -> None:
    old = NOON_S - 365 * DAY_S
    os.utime(segment_path(tmp_path, 4), (old, old))
    four_segments.settings = JournalSettings(max_age_s=DAY_S, max_bytes=1)
    assert len(four_segments.apply_retention()) == 3
    assert segment_files(tmp_path) == ["segment-00000004.db"]
    four_segments.commit(CommitBatch(numbered_blocks(4, 1)))
    assert stored_texts(segment_path(tmp_path, 4)) == steps(3, 2)


# --- a full disk ------------------------------------------------------------------------------


@pytest.fixture
def small_filesystem(tmp_path: Path) -> Iterator[Path]:
    """A real 1 MiB file system (tmpfs), so that the disk fills the way it does in production."""
    with small_tmpfs(tmp_path / "small-fs") as mount_point:
        yield mount_point


def test_a_full_disk_stops_commits_and_the_same_batch_commits_once_when_space_returns(
    small_filesystem: Path,
) -> None:
    directory = small_filesystem / "journal"
    batch = CommitBatch(numbered_blocks(0, 20), checkpoints=[checkpoint("a", 2000)])
    with opened(directory) as journal:
        journal.commit(CommitBatch(checkpoints=[checkpoint("a", 0)]))
        filler = fill(small_filesystem)
        with pytest.raises(JournalUnavailable, match="full"):
            journal.commit(batch)
        with pytest.raises(JournalUnavailable):
            journal.commit(batch)
        assert journal.checkpoints == {"a": checkpoint("a", 0)}
        filler.unlink()
        journal.commit(batch)
        assert journal.checkpoints == {"a": checkpoint("a", 2000)}
    assert stored_texts(segment_path(directory, 1)) == steps(0, 20)
    with opened(directory) as journal:
        assert journal.checkpoints == {"a": checkpoint("a", 2000)}


def test_a_full_disk_at_a_roll_keeps_the_active_segment_and_rolls_when_space_returns(
    small_filesystem: Path,
) -> None:
    directory = small_filesystem / "journal"
    batch = CommitBatch(numbered_blocks(0, 20), checkpoints=[checkpoint("a", 2000)])
    with opened(directory, JournalSettings(segment_bytes=1)) as journal:
        journal.commit(CommitBatch(numbered_blocks(100, 1), checkpoints=[checkpoint("a", 0)]))
        # Fold the WAL into the file now, so that closing segment 1 needs no space at the roll.
        other = Segment(segment_path(directory, 1), 1)
        other.checkpoint_wal()
        other.close()
        filler = fill(small_filesystem)
        for _ in range(2):
            with pytest.raises(JournalUnavailable):
                journal.commit(batch)
        assert newest_sequence(journal.directory) == 1
        assert segment_files(directory) == ["segment-00000001.db"]  # no half-made segment 2
        filler.unlink()
        journal.commit(batch)
        assert newest_sequence(journal.directory) == 2
    assert stored_texts(segment_path(directory, 1)) == steps(100, 1)
    assert stored_texts(segment_path(directory, 2)) == steps(0, 20)
    with opened(directory) as journal:
        assert journal.checkpoints == {"a": checkpoint("a", 2000)}
        assert journal.quarantined == 0


def test_an_open_journal_holds_only_its_active_segment_open(tmp_path: Path) -> None:
    write_segment(tmp_path, CommitBatch(checkpoints=[checkpoint("a", 1)]))
    write_segment(tmp_path, CommitBatch(checkpoints=[checkpoint("a", 2)]))
    _nul_in_the_middle(segment_path(tmp_path, 2))
    with opened(tmp_path) as journal:
        assert journal.quarantined == 1
        assert open_segment_files(tmp_path) == {"segment-00000003.db"}
    assert open_segment_files(tmp_path) == set()


# --- modes: the journal holds whole log lines ---------------------------------------------


def test_under_umask_000_the_journal_folder_is_0700_and_each_segment_file_0600(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "journal"
    with umask(0o000), opened(directory) as journal:
        journal.commit(CommitBatch(numbered_blocks(0, 3), checkpoints=[checkpoint("a", 300)]))
        # While the segment is open SQLite keeps its WAL and shared memory beside it; it gives
        # them the database file's mode.
        assert modes_under(directory) == {
            ".": 0o700,
            "segment-00000001.db": 0o600,
            "segment-00000001.db-shm": 0o600,
            "segment-00000001.db-wal": 0o600,
        }


def test_under_umask_000_a_quarantined_segment_is_in_a_0700_folder(tmp_path: Path) -> None:
    with umask(0o000):
        write_segment(tmp_path, CommitBatch(checkpoints=[checkpoint("a", 1)]))
        write_segment(tmp_path, CommitBatch(checkpoints=[checkpoint("a", 2)]))
        _nul_in_the_middle(segment_path(tmp_path, 2))
        with opened(tmp_path) as journal:
            assert journal.quarantined == 1
    (moved,) = segment_files(tmp_path / "quarantine")
    assert (mode_of(tmp_path / "quarantine"), mode_of(tmp_path / "quarantine" / moved)) == (
        0o700,
        0o600,
    )


def test_a_journal_an_older_version_made_with_the_umask_modes_is_tightened_at_open(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "journal"
    write_segment(directory, CommitBatch(numbered_blocks(0, 3), checkpoints=[checkpoint("a", 1)]))
    (directory / "quarantine").mkdir()
    aside = directory / "quarantine" / "segment-00000009.db.20250914T120000"
    aside.write_bytes(b"damaged")
    for path in (directory, directory / "quarantine"):
        path.chmod(0o755)
    for path in (segment_path(directory, 1), aside):
        path.chmod(0o644)
    with opened(directory):
        pass
    assert modes_under(directory) == {
        ".": 0o700,
        "quarantine": 0o700,
        "quarantine/segment-00000009.db.20250914T120000": 0o600,
        "segment-00000001.db": 0o600,
        "segment-00000010.db": 0o600,  # one past the quarantined 9
    }
    assert stored_texts(segment_path(directory, 1)) == steps(0, 3)


def written_at(path: Path, when_s: float) -> None:
    os.utime(path, (when_s, when_s))


def test_a_restart_the_same_day_writes_on_in_the_newest_segment_and_a_new_day_starts_one(
    tmp_path: Path,
) -> None:
    first = write_segment(
        tmp_path, CommitBatch(events=[event("a")], checkpoints=[checkpoint("f", 10)])
    )
    written_at(segment_path(tmp_path, first), NOON_S)
    with opened(tmp_path, clock=lambda: NOON_S + 3600) as journal:
        journal.commit(CommitBatch(events=[event("b")]))
    assert segment_files(tmp_path) == ["segment-00000001.db"]
    written_at(segment_path(tmp_path, first), NOON_S + 3600)
    with opened(tmp_path, clock=lambda: NOON_S + DAY_S) as journal:
        # A replay after the restart fires "a" and "b" again: the segment before holds them.
        journal.commit(CommitBatch(events=[event("a"), event("b"), event("c")]))
        assert set(journal.checkpoints) == {"f"}
    assert segment_files(tmp_path) == ["segment-00000001.db", "segment-00000002.db"]
    with closing(Segment(segment_path(tmp_path, 2), 2, readonly=True)) as second:
        assert [id_ for _, id_, _ in second.events_after(0, 10)] == ["c"]


def test_a_segment_past_its_size_bound_is_not_written_on_after_a_restart(tmp_path: Path) -> None:
    settings = JournalSettings(segment_bytes=1)
    first = write_segment(tmp_path, CommitBatch(checkpoints=[checkpoint("f", 10)]))
    written_at(segment_path(tmp_path, first), NOON_S)
    with opened(tmp_path, settings) as journal:
        journal.commit(CommitBatch(events=[event("a")]))
    assert segment_files(tmp_path) == ["segment-00000001.db", "segment-00000002.db"]
