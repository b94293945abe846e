"""Journals for tests, written the way the agent writes them.

Log text in the real CANN formats goes through the real parser. The records of each file are cut
into consecutive runs and every commit holds one run of each file as one block, as
`JournalStage.build_batch` does; commits are spread over segments (a journal opened again starts
a new segment); events come from the real rule engine, with the ids the agent gives them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from itertools import pairwise
from pathlib import Path

from npuwatch.agent.rules_stage import event_row
from npuwatch.handoff import Checkpoint, EventRow
from npuwatch.journal.block import encode_block
from npuwatch.journal.rows import FileSource
from npuwatch.journal.segment import BlockToWrite
from npuwatch.journal.store import CommitBatch, Journal, list_segments
from npuwatch.parsers.stream import StreamParser
from npuwatch.parsers.timestamps import LocalClock, resolve_timezone
from npuwatch.records import Record, SourceInfo
from npuwatch.rules.engine import RuleEngine
from npuwatch.rules.loader import RuleSet, default_locations, load_rules

ZONE = "UTC"
"""The zone the logs are written in (and the journal's blocks say they were)."""
WRITTEN_AT_S = 1_757_842_200.0
"""The journal's clock: 2025-09-14 09:30:00 UTC, fixed so that no segment rolls over a day."""


def epoch_us(text: str) -> int:
    """Microseconds since the epoch for an ISO time in UTC ("2025-09-14T09:30:02.402855")."""
    moment = datetime.fromisoformat(text).replace(tzinfo=timezone.utc)
    return int(moment.timestamp()) * 1_000_000 + moment.microsecond


def cann_time(when_us: int) -> str:
    """A time as CANN writes it in a header: `2025-09-14-09:37:31.402.855`."""
    moment = datetime.fromtimestamp(when_us // 1_000_000, tz=timezone.utc)
    micros = when_us % 1_000_000
    return f"{moment:%Y-%m-%d-%H:%M:%S}.{micros // 1000:03d}.{micros % 1000:03d}"


def cann_line(
    level: str, module: str, pid: int, when_us: int, body: str, process: str = "python3"
) -> str:
    """`[LEVEL] MODULE(pid,procname):YYYY-MM-DD-hh:mm:ss.mmm.uuu body`."""
    return f"[{level}] {module}({pid},{process}):{cann_time(when_us)} {body}"


def file_key(host: str, path: str) -> str:
    """A key shaped like the collector's (device-inode-fingerprint), unique per host and path."""
    digest = hashlib.blake2b(f"{host}\0{path}".encode(), digest_size=8).hexdigest()
    return f"fd01-{int(digest[:5], 16):x}-{digest}"


@dataclass
class LogFile:
    """A followed file: where it lives, on which host, what it says, and its parsed records."""

    path: str
    host: str
    lines: Sequence[str]
    key: str = field(init=False)
    records: list[Record] = field(init=False)
    _info: SourceInfo = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.key = file_key(self.host, self.path)
        data = "".join(line + "\n" for line in self.lines).encode()
        parser = StreamParser(LocalClock(resolve_timezone(ZONE)), self.path, self.host)
        self.records = parser.feed(data) + parser.flush()
        # As the tailer gives its batch: the parser's source once the batch is read (which
        # holds the device the file's process named, if it did).
        self._info = parser.source

    @property
    def source(self) -> FileSource:
        """The file as its block rows name it (what `JournalStage.build_batch` writes)."""
        info = self._info or SourceInfo()
        return FileSource(
            self.key, info.path or "", info.host, info.kind, info.channel, info.device,
            info.pid, ZONE,
        )  # fmt: skip

    def block(self, records: Sequence[Record]) -> BlockToWrite:
        return BlockToWrite(
            self.source, encode_block(records), records[0].offset, records[-1].end_offset
        )

    def checkpoint(self, records: Sequence[Record]) -> Checkpoint:
        end = records[-1].end_offset or 0
        return Checkpoint(
            file_key=self.key,
            path=self.path,
            device=0xFD01,
            inode=int(self.key.split("-")[1], 16),
            fingerprint_length=0,
            fingerprint="",
            offset=end,
            replay_from=end,
            size=end,
            updated_us=int(WRITTEN_AT_S * 1_000_000),
        )


@functools.cache
def _default_rules() -> RuleSet:
    return load_rules(default_locations())


def rule_events(files: Sequence[LogFile]) -> list[EventRow]:
    """The events the shipped rules raise on `files` (each file a stream), as journal rows."""
    return rule_events_made(files)[0]


def rule_events_made(files: Sequence[LogFile]) -> tuple[list[EventRow], dict[str, str]]:
    """`rule_events`, and the documents the rules made, by event id: what reading an event
    back gives (the journal keeps the context as a reference to the records)."""
    engine = RuleEngine(_default_rules())
    keys: dict[SourceInfo | None, str] = {}
    for log in files:
        stream = engine.stream(log.records[0].source)
        keys[log.records[0].source] = log.key
        engine.process(log.records, stream)
        stream.close()
    rows, made = [], {}
    for event in engine.flush():
        row = event_row(event, keys.get(event.source))
        rows.append(row)
        made[row.id] = json.dumps(event.to_document(), ensure_ascii=False, separators=(",", ":"))
    return rows, made


def cut(
    records: Sequence[Record], runs: int, rng: random.Random | None = None
) -> list[list[Record]]:
    """`records` in `runs` consecutive runs: even ones, or cut at random points (some empty)."""
    count = len(records)
    if rng is None:
        bounds = [count * index // runs for index in range(runs + 1)]
    else:
        bounds = [0, *sorted(rng.randint(0, count) for _ in range(runs - 1)), count]
    return [list(records[start:end]) for start, end in pairwise(bounds)]


@dataclass
class JournalContents:
    """What a built journal holds, for tests to compute expected answers from."""

    files: list[LogFile]
    events: list[EventRow]
    segments: list[int] = field(default_factory=list)
    """The sequence numbers of the segments written, in order."""
    made: dict[str, str] = field(default_factory=dict)
    """The documents the rules made, by event id (of the shipped rules' events)."""


def commit_batches(
    files: Sequence[LogFile],
    runs: int,
    events: Sequence[EventRow] = (),
    rng: random.Random | None = None,
) -> list[CommitBatch]:
    """Commit `i` holds run `i` of every file that has one, and the events it triggered."""
    cuts = {log.key: cut(log.records, runs, rng) for log in files}
    batches = [CommitBatch() for _ in range(runs)]
    placed: set[str] = set()
    for index, batch in enumerate(batches):
        for log in files:
            run = cuts[log.key][index]
            if not run:
                continue
            batch.blocks.append(log.block(run))
            batch.checkpoints.append(log.checkpoint(run))
            offsets = {record.offset for record in run}
            for row in events:
                if row.id not in placed and row.file_key == log.key and row.offset in offsets:
                    batch.events.append(row)
                    placed.add(row.id)
    batches[-1].events.extend(row for row in events if row.id not in placed)
    return [batch for batch in batches if batch]


def write_segment(directory: Path, batches: Sequence[CommitBatch]) -> int:
    """Open the journal (which starts a new segment), commit `batches`, close; the sequence."""
    journal = Journal(directory, clock=lambda: WRITTEN_AT_S)
    journal.open()
    try:
        for batch in batches:
            journal.commit(batch)
        return newest_sequence(journal.directory)
    finally:
        journal.close()


def write_journal(
    directory: Path,
    files: Sequence[LogFile],
    runs: int = 1,
    segments: int = 1,
    events: Sequence[EventRow] | None = None,
    rng: random.Random | None = None,
) -> JournalContents:
    """Journal `files` in `runs` commits spread evenly over `segments` segments, with the
    events of the shipped rules (or `events`)."""
    rows, made = rule_events_made(files) if events is None else (list(events), {})
    batches = commit_batches(files, runs, rows, rng)
    contents = JournalContents(list(files), rows, made=made)
    for index in range(segments):
        share = batches[len(batches) * index // segments : len(batches) * (index + 1) // segments]
        if share:
            contents.segments.append(write_segment(directory, share))
    return contents


def newest_sequence(directory: Path) -> int:
    """The sequence of the newest segment: the one an open journal writes to."""
    return list_segments(directory)[-1][0]
