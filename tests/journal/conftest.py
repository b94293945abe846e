"""Small builders for the journal storage tests: plog lines, parsed records, blocks, checkpoints
and events, with fixed values so that tests can assert exact ones."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from npuwatch.handoff import Checkpoint, EventRow
from npuwatch.journal.block import encode_block
from npuwatch.journal.rows import FileSource, StoredRecord
from npuwatch.journal.segment import BlockToWrite
from npuwatch.parsers.stream import parse_bytes
from npuwatch.parsers.timestamps import LocalClock, resolve_timezone
from npuwatch.records import Record

PLOG_PATH = "/x/debug/plog/plog-123_20250914093300120.log"
SOURCE = FileSource("fd01-7b-aa", PLOG_PATH, host="node-7", kind="plog", channel="debug")


def epoch_us(text: str) -> int:
    """Microseconds since the epoch of an ISO time in UTC ("2025-09-14T09:37:31.402855")."""
    moment = datetime.fromisoformat(text).replace(tzinfo=timezone.utc)
    return int(moment.timestamp()) * 1_000_000 + moment.microsecond


def plog_line(index: int, level: str = "INFO", module: str = "GE", body: str = "") -> str:
    """A CANN plog line numbered `index`, one second after 09:30:00 per index (wrapping hourly)."""
    minute, second = divmod(index % 3600, 60)
    text = body or f"step {index} finished"
    return (
        f"[{level}] {module}(4100,python3):2025-09-14-09:{minute:02d}:{second:02d}.000.000 "
        f"[trainer.cc:{index}] [4101]{text}"
    )


def parse_plog(data: bytes | str, path: str = PLOG_PATH) -> list[Record]:
    """Records of a plog stream, parsed in UTC."""
    raw = data.encode() if isinstance(data, str) else data
    return parse_bytes(raw, LocalClock(resolve_timezone("UTC")), path=path)


def stored(record: Record) -> StoredRecord:
    """What the journal keeps of a record: the fields a block gives back."""
    return StoredRecord(
        timestamp_us=record.timestamp_us,
        level=record.level,
        logger=record.logger,
        pid=record.pid,
        error_codes=list(record.error_codes),
        flags=record.flags & 0xFFFF,
        offset=record.offset,
        end_offset=record.end_offset,
        original=record.original,
    )


def block_of(records: Sequence[Record], source: FileSource = SOURCE) -> BlockToWrite:
    return BlockToWrite(source, encode_block(records), records[0].offset, records[-1].end_offset)


def numbered_blocks(first: int, count: int) -> list[BlockToWrite]:
    """`count` blocks of one record each, the record of block `i` reading `step i finished`."""
    lines = "".join(plog_line(index) + "\n" for index in range(first, first + count))
    return [block_of([record]) for record in parse_plog(lines)]


def checkpoint(file_key: str, offset: int) -> Checkpoint:
    return Checkpoint(
        file_key=file_key,
        path=f"/x/debug/plog/{file_key}.log",
        device=64769,
        inode=1000 + len(file_key),
        fingerprint_length=64,
        fingerprint="9f" * 8,
        offset=offset,
        replay_from=offset,
        size=offset + 10,
        updated_us=1_757_842_200_000_000,
    )


def event(event_id: str, document: str = "{}") -> EventRow:
    return EventRow(
        id=event_id,
        timestamp_us=1_757_842_651_402_855,
        rule="hccl-notify-timeout",
        category="communication",
        severity="error",
        level="ERROR",
        logger="HCCL",
        code="E30009",
        device=3,
        host="node-7",
        path=PLOG_PATH,
        file_key=SOURCE.file_key,
        offset=0,
        pid=4100,
        count=1,
        document=document,
    )


def segment_files(directory: Path) -> list[str]:
    """Names of the files in `directory`, sorted, without the SQLite side files."""
    return sorted(
        entry.name
        for entry in directory.iterdir()
        if entry.is_file() and not entry.name.endswith(("-wal", "-shm"))
    )


def open_segment_files(directory: Path) -> set[str]:
    """The segment files this process has open under `directory` (Linux: /proc/self/fd)."""
    found = set()
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = fd.readlink()
        except OSError:  # closed since the listing
            continue
        if target.is_relative_to(directory) and target.name.endswith(".db"):
            found.add(target.name)
    return found
