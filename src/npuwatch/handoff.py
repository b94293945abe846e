"""What the stages hand each other: checkpoints, event and state rows, and the journal's work.

The reader, the rules thread, the collective watch, the debugging and profiling importers and
the journal thread pass these along; the journal writes them (journal/segment.py) and the sinks
read the rows back. They live apart from all of them, so that no stage imports another's module
for a type, and the SQLite module is not where a tailer finds its checkpoint.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass, field, fields

from npuwatch.records import Record, SourceInfo


@dataclass(frozen=True)
class Checkpoint:
    """How far a file has been journaled, and which file that is (see collector.identity)."""

    file_key: str
    path: str
    device: int
    inode: int
    fingerprint_length: int
    fingerprint: str
    offset: int
    """Every record that ends at or before this byte is in the journal."""
    replay_from: int
    """Where to start reading after a restart: before `offset` when a rule event triggered
    before it was still waiting for context (the records in between are replayed to the rules,
    not journaled again)."""
    size: int
    """The file's size when last seen (what 'deleted unread' compares against)."""
    updated_us: int
    mark_end: int = 0
    mark_length: int = 0
    mark_digest: str = ""
    """The last bytes read before `mark_end` (collector.identity.ReadMark): a file whose first
    bytes match but which holds other bytes there is another file. Empty when not known."""
    generation: int = 0
    """Of the file's identity: another file with the same inode and first bytes counts up."""

    def row(self) -> tuple[object, ...]:
        """The values in the order of CHECKPOINT_FIELDS (the journal's columns)."""
        return astuple(self)


CHECKPOINT_FIELDS = tuple(f.name for f in fields(Checkpoint))


@dataclass(frozen=True)
class EventRow:
    id: str
    timestamp_us: int | None
    rule: str
    category: str | None
    severity: str
    level: str | None
    logger: str | None
    code: str | None
    device: int | None
    host: str | None
    path: str | None
    file_key: str | None
    offset: int | None
    pid: int | None
    count: int
    document: str


@dataclass(frozen=True)
class StateRow:
    """A document that is replaced, not added to (a process's topology, an agent's heartbeat):
    a later row with the same id takes the place of the earlier one, with a new `seq`, so that
    a sink's cursor sees it again. AUTOINCREMENT: a seq is never given twice, even to the row
    that replaces the newest one."""

    id: str
    stream: str
    updated_us: int
    document: str


@dataclass
class JournalWork:
    """What the journal thread writes for one read batch."""

    file_key: str
    source: SourceInfo | None
    records: list[Record] = field(default_factory=list)
    events: list[EventRow] = field(default_factory=list)
    checkpoint: Checkpoint | None = None
    forget: str | None = None
    size: int = 0
    states: list[StateRow] = field(default_factory=list)
