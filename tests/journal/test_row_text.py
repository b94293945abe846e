"""The journal's row texts (event documents, notable lines) compressed with a dictionary each
segment trains on its own first rows: exact round trips, old segments read as they are and
compressed when written again, readers opened before the training, damaged texts."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from npuwatch.handoff import EventRow
from npuwatch.journal import row_text
from npuwatch.journal.query import search
from npuwatch.journal.question import Question
from npuwatch.journal.row_text import TRAIN_AFTER_ROWS, RowTextDecoder, RowTextError
from npuwatch.journal.segment import Segment

from .conftest import block_of, event, parse_plog, plog_line

WRITTEN_US = 1_757_842_700_000_000
CODES = ("E30009", "EI0002", "EE1001", "EZ9999", "E19999")


def documents(first: int, count: int) -> dict[str, str]:
    """`count` event documents, each different (numbers, codes, devices), keyed by id."""
    made = {}
    for index in range(first, first + count):
        code = CODES[index % len(CODES)]
        made[f"ev-{index:05d}"] = json.dumps(
            {
                "@timestamp": f"2025-09-14T09:{index % 60:02d}:{index % 59:02d}.{index:06d}Z",
                "message": f"notify wait timeout on device {index % 8}, error code {code}",
                "error": {"code": code},
                "log": {"offset": index * 311, "file": {"path": f"/x/plog/plog-{index}.log"}},
                "rule": {"id": f"rule-{index % 7}", "category": "communication"},
                "ascend": {"finding": {"count": index, "advice": "check the peer rank first"}},
            }
        )
    return made


def event_rows(made: dict[str, str]) -> list[EventRow]:
    return [event(event_id, document) for event_id, document in made.items()]


def error_lines(first: int, count: int) -> str:
    return "".join(
        plog_line(index, "ERROR", "HCCL", f"link {index % 16} timed out, error code "
                  f"{CODES[index % len(CODES)]} after {index * 7} ms") + "\n"
        for index in range(first, first + count)
    )  # fmt: skip


def stored_types(path: Path, table: str, column: str) -> dict[str, int]:
    with sqlite3.connect(path) as db:
        rows = db.execute(f"SELECT typeof({column}), count(*) FROM {table} GROUP BY 1")
        return {str(kind): int(count) for kind, count in rows}


def all_events(segment: Segment) -> list[tuple[str, str]]:
    return [(id_, document) for _, id_, document in segment.events_after(0, 100_000)]


def test_texts_stay_plain_until_enough_rows_then_every_row_is_compressed_and_reads_back(
    tmp_path: Path,
) -> None:
    path = tmp_path / "segment-00000001.db"
    segment = Segment(path, 1)
    early, late = documents(0, TRAIN_AFTER_ROWS - 12), documents(TRAIN_AFTER_ROWS - 12, 100)
    early_lines = parse_plog(error_lines(0, TRAIN_AFTER_ROWS - 12))
    segment.append([block_of(early_lines)], event_rows(early), [], [], WRITTEN_US)
    assert stored_types(path, "events", "document") == {"text": len(early)}
    assert stored_types(path, "notable", "original") == {"text": len(early_lines)}

    late_lines = parse_plog(error_lines(TRAIN_AFTER_ROWS - 12, 100))
    segment.append([block_of(late_lines)], event_rows(late), [], [], WRITTEN_US)
    # The dictionary is trained and every row, the earlier ones too, is compressed.
    assert stored_types(path, "events", "document") == {"blob": len(early) + len(late)}
    assert stored_types(path, "notable", "original") == {"blob": len(early_lines) + 100}
    with sqlite3.connect(path) as db:
        kinds = sorted(kind for (kind,) in db.execute("SELECT kind FROM dictionaries"))
        stored_bytes = db.execute("SELECT sum(length(document)) FROM events").fetchone()[0]
    assert kinds == ["events", "notable"]
    written = {**early, **late}
    assert stored_bytes < sum(len(text) for text in written.values()) / 3

    # Byte for byte what was written, in order, each once.
    assert all_events(segment) == list(written.items())
    hits = list(search(tmp_path, Question(levels=frozenset({"ERROR"}))))
    assert [hit.record.original for hit in hits] == [
        record.original for record in early_lines + late_lines
    ]
    segment.close()


def test_a_segment_from_before_the_dictionaries_reads_as_it_is_and_is_compressed_when_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "segment-00000001.db"
    monkeypatch.setattr(row_text, "TRAIN_AFTER_ROWS", 10**9)
    old = Segment(path, 1)
    made = documents(0, 700)
    lines = parse_plog(error_lines(0, 700))
    old.append([block_of(lines)], event_rows(made), [], [], WRITTEN_US)
    old.close()
    with sqlite3.connect(path) as db:  # what an npuwatch before this format wrote
        db.execute("DROP TABLE dictionaries")
    monkeypatch.undo()

    reader = Segment(path, 1, readonly=True)
    assert all_events(reader) == list(made.items())
    reader.close()
    hits = list(search(tmp_path, Question(levels=frozenset({"ERROR"}))))
    assert [hit.record.original for hit in hits] == [record.original for record in lines]

    writer = Segment(path, 1)  # the agent writes on: the segment is compressed in place
    more = documents(700, 1)
    writer.append([], event_rows(more), [], [], WRITTEN_US)
    writer.append([block_of(parse_plog(error_lines(700, 1)))], [], [], [], WRITTEN_US)
    assert stored_types(path, "events", "document") == {"blob": 701}
    assert stored_types(path, "notable", "original") == {"blob": 701}
    assert all_events(writer) == list({**made, **more}.items())
    writer.close()
    hits = list(search(tmp_path, Question(levels=frozenset({"ERROR"}))))
    assert len(hits) == 701
    assert [hit.record.original for hit in hits[:700]] == [record.original for record in lines]


def test_a_reader_opened_before_the_training_reads_the_rows_compressed_after_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "segment-00000001.db"
    writer = Segment(path, 1)
    first = documents(0, 10)
    writer.append([], event_rows(first), [], [], WRITTEN_US)
    reader = Segment(path, 1, readonly=True)
    assert all_events(reader) == list(first.items())  # its dictionaries are read: none yet
    rest = documents(10, TRAIN_AFTER_ROWS)
    writer.append([], event_rows(rest), [], [], WRITTEN_US)
    assert stored_types(path, "events", "document") == {"blob": 10 + TRAIN_AFTER_ROWS}
    assert all_events(reader) == list({**first, **rest}.items())
    reader.close()
    writer.close()


def test_a_damaged_text_is_left_out_with_a_warning_and_grep_reads_its_record_from_the_block(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "segment-00000001.db"
    writer = Segment(path, 1)
    made = documents(0, TRAIN_AFTER_ROWS + 8)
    lines = parse_plog(error_lines(0, TRAIN_AFTER_ROWS + 8))
    writer.append([block_of(lines)], event_rows(made), [], [], WRITTEN_US)
    writer.close()
    with sqlite3.connect(path) as db:
        (document,) = db.execute("SELECT document FROM events WHERE seq = 5").fetchone()
        damaged = bytearray(document)
        damaged[len(damaged) // 2] ^= 0xFF
        db.execute("UPDATE events SET document = ? WHERE seq = 5", (bytes(damaged),))
        (original,) = db.execute("SELECT original FROM notable WHERE rowid = 3").fetchone()
        db.execute("UPDATE notable SET original = ? WHERE rowid = 3", (original[:-6],))

    reader = Segment(path, 1, readonly=True)
    read = all_events(reader)
    reader.close()
    expected = list(made.items())
    assert read == expected[:4] + expected[5:]
    (warning,) = caplog.messages
    assert warning.startswith(f"journal segment {path} is damaged (event 5: a stored text")

    # The notable line's record is still in its block, where grep reads it.
    hits = list(search(tmp_path, Question(levels=frozenset({"ERROR"}))))
    assert [hit.record.original for hit in hits] == [record.original for record in lines]
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"npuwatch: journal segment {path} is damaged (a stored text")


def test_a_text_naming_a_dictionary_the_segment_lacks_is_an_error_that_says_so(
    tmp_path: Path,
) -> None:
    path = tmp_path / "segment-00000001.db"
    writer = Segment(path, 1)
    writer.append([], event_rows(documents(0, TRAIN_AFTER_ROWS)), [], [], WRITTEN_US)
    writer.close()
    with sqlite3.connect(path) as db:
        (dictionary_id,) = db.execute("SELECT id FROM dictionaries").fetchone()
        (stored,) = db.execute("SELECT document FROM events WHERE seq = 1").fetchone()
        db.execute("DELETE FROM dictionaries")
    expected = f"dictionary {dictionary_id}, which its segment does not hold"
    with closing(sqlite3.connect(path)) as db, pytest.raises(RowTextError, match=expected):
        RowTextDecoder(db).decode(stored)
