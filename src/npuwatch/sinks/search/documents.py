"""Journal entries as bulk actions: one ECS document per record or event, with an `_id` that
the same entry always gets, so that sending it again is a 409, never a duplicate.

A record's id comes from the host, the file's identity (device, inode, fingerprint: the
journal's file key) and the record's byte offset in that file; an event's is the id the
journal gave it (rule, file, offset and time of its trigger).
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Iterator
from typing import Any, NamedTuple

from npuwatch.handoff import StateRow
from npuwatch.journal.block import decode_block
from npuwatch.journal.documents import to_records
from npuwatch.journal.segment import StoredBlock
from npuwatch.parsers.telemetry import TELEMETRY_KINDS
from npuwatch.records import format_timestamp
from npuwatch.sinks.search.streams import (
    dataset_of,
    events_stream,
    record_stream,
    state_index,
)
from npuwatch.vocabulary import LEVEL_RANKS


class Action(NamedTuple):
    """One document of a bulk request, and what a dead letter needs to say which entry it was:
    a `create` into a data stream (a replay is answered 409), or an `index` that replaces the
    document of the same id (a state: a process's topology, an agent's heartbeat)."""

    id: str
    stream: str
    document: dict[str, Any]
    op: str = "create"

    def bulk(self) -> dict[str, Any]:
        return {
            "_op_type": self.op,
            "_index": self.stream,
            "_id": self.id,
            "_source": self.document,
        }


def record_id(host: str, file_key: str, offset: int | str) -> str:
    digest = hashlib.blake2b(f"{host}\0{file_key}\0{offset}".encode(), digest_size=15).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii")


def levels_below(minimum: str) -> frozenset[str]:
    """The levels a sink with `min_level = minimum` leaves in the journal. A record with no
    level, or one this table does not know, is always shipped: it may be the traceback that
    explains the failure."""
    floor = LEVEL_RANKS[minimum]
    return frozenset(level for level, rank in LEVEL_RANKS.items() if rank < floor)


def block_actions(
    block: StoredBlock, namespace: str, host: str, skipped_levels: frozenset[str] = frozenset()
) -> Iterator[Action | None]:
    """The action for every record of a journal block, in order; None for a log record whose
    level is in `skipped_levels` (it stays in the journal only). Device readings and profiling
    operators are never skipped: they have no log level to speak of."""
    source = block.source
    index = record_stream(source.kind, namespace)
    dataset = dataset_of(source.kind)
    where = source.host or host
    if source.kind in TELEMETRY_KINDS:
        skipped_levels = frozenset()
    records = decode_block(block.payload)
    shipped = [stored for stored in records if stored.level not in skipped_levels]
    rebuilt = iter(to_records(shipped, source))
    for position, stored in enumerate(records):
        if stored.level in skipped_levels:
            yield None
            continue
        document = next(rebuilt).to_document()
        if "@timestamp" not in document:  # no time in the stream yet: a data stream needs one
            document["@timestamp"] = _now()
        document.setdefault("host", {"name": where})
        document["data_stream"] = {"type": "logs", "dataset": dataset, "namespace": namespace}
        offset: int | str = stored.offset if stored.offset is not None else f"{block.id}:{position}"
        yield Action(record_id(where, source.file_key, offset), index, document)


def event_action(event_id: str, document_text: str, namespace: str) -> Action:
    document = json.loads(document_text)
    if not document.get("@timestamp"):  # its trigger had no time: when it was found, then
        first = document.get("ascend", {}).get("finding", {}).get("first")
        document["@timestamp"] = first or _now()
    document["data_stream"] = {
        "type": "logs",
        "dataset": "ascend.events",
        "namespace": namespace,
    }
    return Action(event_id, events_stream(namespace), document)


def state_action(row: StateRow, namespace: str) -> Action:
    """A state replaces its earlier version in its plain index (`logs-ascend.<stream>-<ns>`)."""
    return Action(row.id, state_index(row.stream, namespace), json.loads(row.document), "index")


def _now() -> str:
    return format_timestamp(int(time.time() * 1_000_000))
