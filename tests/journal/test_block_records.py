"""A block's records made whole again together (journal.documents.to_records): the same records,
field for field, as making each alone, on every file of the fixture trees, and when the texts
joined do not parse back one for one."""

from __future__ import annotations

from pathlib import Path

import pytest

from npuwatch.journal import documents
from npuwatch.journal.documents import to_record, to_records
from npuwatch.journal.rows import FileSource
from npuwatch.parsers.paths import describe_path
from npuwatch.parsers.stream import parse_bytes
from npuwatch.parsers.timestamps import LocalClock, resolve_timezone
from tests.conftest import real_log_files

from .conftest import parse_plog, plog_line, stored

TREES = Path(__file__).resolve().parents[2] / "fixtures" / "trees"
UTC = LocalClock(resolve_timezone("UTC"))
LOG_FILES = sorted(path for path in TREES.rglob("*") if path.is_file())
EVERY_FILE = LOG_FILES + real_log_files()


def source_of(path: Path) -> FileSource:
    info = describe_path(str(path), UTC)
    return FileSource(
        "fe00-1-" + path.name, str(path), "node-7", info.kind, info.channel, info.device,
        info.pid, "UTC",
    )  # fmt: skip


def test_the_fixture_trees_hold_files_of_many_kinds() -> None:
    kinds = {source_of(path).kind for path in LOG_FILES}
    assert len(LOG_FILES) >= 20 and len(kinds) >= 4, kinds


@pytest.mark.parametrize("path", EVERY_FILE, ids=lambda path: path.name)
def test_records_made_together_are_the_records_made_one_by_one(path: Path) -> None:
    """On the fixture trees and on the real excerpts of ../shared/real-logs."""
    source = source_of(path)
    records = parse_bytes(path.read_bytes(), UTC, path=str(path), host="node-7")
    kept = [stored(record) for record in records]
    together = [record.to_document() for record in to_records(kept, source)]
    alone = [to_record(record, source).to_document() for record in kept]
    assert together == alone
    assert len(together) == len(kept)


def test_a_plog_block_is_parsed_once_not_record_by_record(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(documents, "to_record", lambda record, source: calls.append(record))
    path = next(path for path in LOG_FILES if source_of(path).kind == "plog")
    kept = [stored(record) for record in parse_bytes(path.read_bytes(), UTC, path=str(path))]
    assert len(documents.to_records(kept, source_of(path))) == len(kept) > 10
    assert calls == []


def test_texts_that_join_into_other_records_are_made_one_by_one() -> None:
    # A record cut from its neighbour (a split part) starts without a header: joined after the
    # record before it, it would read as that record's continuation line.
    head = parse_plog(plog_line(1, "ERROR", "HCCL", "notify wait timeout") + "\n")[0]
    part = stored(head)._replace(original="  rank 3 did not answer", offset=400, end_offset=423)
    kept = [stored(head), part]
    source = FileSource("fe00-1-aa", "/x/debug/plog/plog-123_1.log", "node-7", "plog", "debug")
    together = to_records(kept, source)
    assert [record.original for record in together] == [record.original for record in kept]
    assert [record.to_document() for record in together] == [
        to_record(record, source).to_document() for record in kept
    ]
    assert together[1].format == "unparsed"
