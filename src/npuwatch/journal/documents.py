"""Records read back from the journal, made whole again for printing and shipping.

A block keeps per record what queries filter on (time, level, module, pid, codes, flags,
offsets) and the original text; the rest (message, origin, thread, tags) is derived again from
the text by the same parser, and the kept fields win over whatever the second parse says.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from npuwatch.journal.rows import FileSource, StoredRecord
from npuwatch.parsers.stream import parse_bytes
from npuwatch.parsers.telemetry import TELEMETRY_KINDS, telemetry_record
from npuwatch.parsers.timestamps import LocalClock, resolve_timezone
from npuwatch.records import Record, SourceInfo


@lru_cache(maxsize=16)
def _clock(zone_name: str | None) -> LocalClock:
    try:
        zone = resolve_timezone(zone_name)
    except ValueError:
        zone = resolve_timezone("UTC")
    return LocalClock(zone)


@lru_cache(maxsize=256)
def source_info(source: FileSource) -> SourceInfo:
    return SourceInfo(
        path=source.path or None,
        host=source.host,
        kind=source.kind or "other",
        channel=source.channel,
        device=source.device,
        pid=source.file_pid,
    )


def to_record(stored: StoredRecord, source: FileSource) -> Record:
    """The full record for a stored one."""
    info = source_info(source)
    if source.kind in TELEMETRY_KINDS:
        record = telemetry_record(stored.original, source.kind)
        record.timestamp_us = stored.timestamp_us
        record.offset = stored.offset
        record.end_offset = stored.end_offset
        record.source = info
        return record
    parsed = parse_bytes(
        stored.original.encode("utf-8"), _clock(source.timezone), path=info.path, host=info.host
    )
    if len(parsed) == 1:
        record = parsed[0]
    else:  # the text does not parse back into one record (a split part): keep it whole
        record = Record(stored.original, "unparsed")
        record.message = stored.original
    return _with_kept_fields(record, stored, info)


def to_records(stored: Sequence[StoredRecord], source: FileSource) -> list[Record]:
    """`to_record` of each of `stored` (records of one block, in their order). Their texts are
    parsed together, once, when that gives back the same records one for one (it does unless a
    record was cut from its neighbour): a parser made and run per record costs six times what
    one line of a longer text does."""
    if len(stored) < 2 or source.kind in TELEMETRY_KINDS:
        return [to_record(record, source) for record in stored]
    info = source_info(source)
    originals = [record.original for record in stored]
    parsed = parse_bytes(
        "\n".join(originals).encode("utf-8"),
        _clock(source.timezone),
        path=info.path,
        host=info.host,
    )
    if len(parsed) != len(stored) or any(
        record.original != original for record, original in zip(parsed, originals, strict=True)
    ):
        return [to_record(record, source) for record in stored]
    return [
        # A text that ends in an empty line keeps it when parsed inside the others, and loses
        # it when parsed alone: such a record is made alone, as to_record always made it.
        to_record(kept, source)
        if kept.original.endswith("\n")
        else _with_kept_fields(record, kept, info)
        for record, kept in zip(parsed, stored, strict=True)
    ]


def _with_kept_fields(record: Record, stored: StoredRecord, info: SourceInfo) -> Record:
    """`record` (parsed again from its text) with the fields the journal kept, which win."""
    record.original = stored.original
    record.timestamp_us = stored.timestamp_us
    record.level = stored.level
    record.logger = stored.logger
    record.pid = stored.pid
    record.error_codes = stored.error_codes
    record.flags = stored.flags
    record.offset = stored.offset
    record.end_offset = stored.end_offset
    record.source = info
    return record
