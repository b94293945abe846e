"""Records read back from the journal, made whole again for printing and shipping.

A block keeps per record what queries filter on (time, level, module, pid, codes, flags,
offsets) and the original text; the rest (message, origin, thread, tags) is derived again from
the text by the same parser, and the kept fields win over whatever the second parse says.
"""

from __future__ import annotations

from functools import lru_cache

from npuwatch.journal.rows import FileSource, StoredRecord
from npuwatch.parsers import LocalClock
from npuwatch.parsers.stream import parse_bytes
from npuwatch.parsers.telemetry import TELEMETRY_KINDS, telemetry_record
from npuwatch.parsers.timestamps import resolve_timezone
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
