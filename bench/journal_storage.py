"""The journal's storage decision, measured: a row per record versus npuwatch's blocks.

    python bench/journal_storage.py [--lines 300000] [--work /tmp/npuwatch-journal-storage]

Parses a generated log tree once (real CANN formats, bench/make_tree.py), in the 1 MiB batches
the agent commits, then writes the same batches three ways, each in SQLite WAL with
synchronous=FULL and one transaction per batch (what "offsets are committed only after the
batch is on disk" costs):
  rows        a row per record, indexed by time and by error code;
  blocks      npuwatch's journal (journal/segment.py): one compressed column block per batch,
              plus a row per notable record (WARNING and above, or coded) in the index;
and, for the block payload, the codecs side by side on the raw text: zstd level 1 (what blocks
use), zlib level 1 (what they used first), and none. Reference: parsing the same batches.
The decision these numbers carried is docs/adr/0001-journal-storage.md.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import zstandard

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_tree import write_tree
from npuwatch.collector.files import list_log_files, read_chunks
from npuwatch.gc_tuning import tune_garbage_collector
from npuwatch.journal.block import encode_block
from npuwatch.journal.rows import FileSource
from npuwatch.journal.segment import BlockToWrite, Segment
from npuwatch.parsers.stream import StreamParser
from npuwatch.parsers.timestamps import LocalClock, resolve_timezone
from npuwatch.records import Record
from npuwatch.untrusted_files import open_binary

Batch = tuple[FileSource, list[Record], bytes]


def parse_batches(tree: Path) -> tuple[list[Batch], float]:
    clock = LocalClock(resolve_timezone("UTC"))
    batches: list[Batch] = []
    started = time.perf_counter()
    for path in list_log_files(tree).files:
        parser = StreamParser(clock, path=str(path))
        source = FileSource(str(path), str(path))
        offset = 0
        with open_binary(path) as handle:
            for chunk in read_chunks(handle, 1 << 20):
                records = parser.feed(chunk, offset)
                offset += len(chunk)
                if records:
                    batches.append((source, records, chunk))
        rest = parser.flush()
        if rest:
            batches.append((source, rest, b""))
    return batches, time.perf_counter() - started


def write_rows(path: Path, batches: list[Batch]) -> float:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute(
        "CREATE TABLE records (timestamp_us INTEGER, level TEXT, logger TEXT, pid INTEGER, "
        "code TEXT, flags INTEGER, path TEXT, offset INTEGER, original TEXT)"
    )
    db.execute("CREATE INDEX records_by_time ON records (timestamp_us)")
    db.execute("CREATE INDEX records_by_code ON records (code, timestamp_us)")
    started = time.perf_counter()
    for source, records, _ in batches:
        rows = [
            (
                r.timestamp_us,
                r.level,
                r.logger,
                r.pid,
                r.error_codes[0] if r.error_codes else None,
                r.flags,
                source.path,
                r.offset,
                r.original,
            )
            for r in records
        ]
        db.execute("BEGIN")
        db.executemany("INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        db.execute("COMMIT")
    elapsed = time.perf_counter() - started
    db.close()
    return elapsed


def write_blocks(path: Path, batches: list[Batch]) -> float:
    segment = Segment(path, 1, sync="full")
    started = time.perf_counter()
    for number, (source, records, _) in enumerate(batches):
        block = BlockToWrite(
            source, encode_block(records), records[0].offset, records[-1].end_offset
        )
        segment.append([block], [], [], [], written_us=number)
    elapsed = time.perf_counter() - started
    segment.checkpoint_wal()
    segment.close()
    return elapsed


def on_disk(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(f"{path.name}*"))


def codec(compress: Callable[[bytes], bytes], raw: list[bytes]) -> tuple[float, int]:
    started = time.perf_counter()
    size = sum(len(compress(chunk)) for chunk in raw)
    return time.perf_counter() - started, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=300_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/npuwatch-journal-storage"))
    args = parser.parse_args()
    tune_garbage_collector()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    raw_bytes = write_tree(args.work / "tree", args.lines)
    batches, parse_s = parse_batches(args.work / "tree")
    count = sum(len(records) for _, records, _ in batches)
    print(f"{count:,} records ({raw_bytes / 1e6:.0f} MB of text) in {len(batches)} batches")
    print(f"reference: parsing them      {count / parse_s:>9,.0f} records/s")
    for label, write, name in (
        ("a row per record", write_rows, "rows.db"),
        ("npuwatch blocks", write_blocks, "segment-00000001.db"),
    ):
        elapsed = write(args.work / name, batches)
        size = on_disk(args.work / name)
        print(
            f"{label:<18}          {count / elapsed:>9,.0f} records/s, "
            f"{size / 1e6:6.1f} MB on disk ({size / raw_bytes:.2f} of the text's size)"
        )
    raw = [chunk for _, _, chunk in batches if chunk]
    total = sum(map(len, raw))
    zstd = zstandard.ZstdCompressor(level=1)
    for label, compress in (
        ("zstd level 1", zstd.compress),
        ("zlib level 1", lambda chunk: zlib.compress(chunk, 1)),
    ):
        elapsed, size = codec(compress, raw)
        print(f"codec {label}: {total / elapsed / 1e6:6.0f} MB/s, {total / size:.1f}x")


if __name__ == "__main__":
    main()
