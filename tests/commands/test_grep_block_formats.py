"""`npuwatch grep` answers every question the same from a journal of format-3 blocks (text in
filtered frames) as from the same journal with its blocks in format 2 (one zstd frame), which
journals written before 0.2.0 hold."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
import zstandard

from npuwatch.journal import text_frames
from npuwatch.journal.block import _HEADER as HEADER
from npuwatch.journal.block import decode_block, text_start, unpack
from npuwatch.journal.block_sparse import decode_sparse, encode_sparse
from npuwatch.journal.text_frames import FramedBlock
from tests.commands.test_grep_command import grep, journal_files
from tests.journal.journal_builder import write_journal

QUESTIONS = [
    ("timeout",),
    ("notify wait timeout",),
    (r"error code E\d+",),
    ("-i", "AICORE"),
    ("-C", "1", "BuildGraph"),
    ("--json", "TaskFail"),
    ("-F", "[IMP] link"),
    ("rank \\d waited",),
    ("--level", "ERROR", "code"),
    ("--module", "GE", "graph"),
    ("(?<!x)done",),
    ("设备",),
    ("no such text anywhere",),
    ("Rank\\[2\\] failed",),
]


def format_2_body(body: bytes) -> bytes:
    """A format-3 block's uncompressed columns and text laid out as format 2 (its sparse
    columns as JSON)."""
    version, count, dictionary_length, sparse_length = HEADER.unpack_from(body)
    assert version == 3
    end = text_start(body)
    flags, codes = decode_sparse(3, body[end - sparse_length : end])
    sparse = encode_sparse(
        2, [[p, f] for p, f in flags.items()], [[p, c] for p, c in codes.items()]
    )
    header = HEADER.pack(2, count, dictionary_length, len(sparse))
    return header + body[HEADER.size : end - sparse_length] + sparse + body[end:]


def as_format_2(directory: Path) -> None:
    """Every block of the journal rewritten as npuwatch 0.1 wrote it."""
    compressor = zstandard.ZstdCompressor(level=1, write_checksum=True)
    for segment in sorted(directory.glob("segment-*.db")):
        with closing(sqlite3.connect(segment)) as db, db:
            rows = db.execute("SELECT id, payload FROM blocks").fetchall()
            for block_id, payload in rows:
                assert payload[:1] == b"f"
                old = b"s" + compressor.compress(format_2_body(unpack(payload)))
                db.execute("UPDATE blocks SET payload = ? WHERE id = ?", (old, block_id))


@pytest.fixture(scope="module")
def journals(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("formats")
    files = journal_files()
    with pytest.MonkeyPatch.context() as patch:  # frames of a record or two: many a block
        patch.setattr(text_frames, "FRAME_CHARACTERS", 100)
        write_journal(root / "new", files)
        write_journal(root / "old", files)
    as_format_2(root / "old")
    return root / "new", root / "old"


@pytest.mark.parametrize("question", QUESTIONS, ids=" ".join)
def test_grep_prints_the_same_from_format_3_and_format_2_blocks(
    journals: tuple[Path, Path], question: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    new, old = journals
    status_new = grep(new, *question)
    printed_new = capsys.readouterr()
    status_old = grep(old, *question)
    printed_old = capsys.readouterr()
    assert (status_new, printed_new.out, printed_new.err) == (
        status_old,
        printed_old.out,
        printed_old.err,
    )


def test_a_damaged_frame_costs_grep_its_own_records_and_is_told(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(text_frames, "FRAME_CHARACTERS", 100)
        write_journal(tmp_path / "journal", journal_files())
    assert grep(tmp_path / "journal", "--no-filename", "0") == 0
    every = capsys.readouterr().out.splitlines()
    segment = next((tmp_path / "journal").glob("segment-*.db"))
    with closing(sqlite3.connect(segment)) as db, db:
        block_id, payload = db.execute("SELECT id, payload FROM blocks ORDER BY id").fetchone()
        framed = FramedBlock.read(payload)
        assert framed.frame_count > 2
        at = (framed.frame_at[1] + framed.frame_at[2]) // 2  # inside the second frame
        damaged = payload[:at] + bytes([payload[at] ^ 0x5A]) + payload[at + 1 :]
        db.execute("UPDATE blocks SET payload = ? WHERE id = ?", (damaged, block_id))
        lost = decode_block(payload)[framed.bounds[1] : framed.bounds[2]]
    grep(tmp_path / "journal", "--no-filename", "0")
    printed = capsys.readouterr()
    lost_lines = {line for record in lost for line in record.original.splitlines()}
    assert lost_lines and printed.out.splitlines() == [
        line for line in every if line not in lost_lines
    ]
    assert "is damaged" in printed.err and "frame 1" in printed.err
