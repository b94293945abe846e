"""An event's context is journaled as a reference to its records and read back as the text the
rule made: byte for byte, across blocks and segments, in a file truncated and written again,
from journals written before this format, and empty (saying so) when the records are gone."""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npuwatch.handoff import EventRow
from npuwatch.journal.reader import JournalReader, Position
from npuwatch.journal.store import CommitBatch, list_segments
from npuwatch.record_schema import LogRecord
from tests.journal.journal_builder import (
    LogFile,
    cann_line,
    epoch_us,
    rule_events_made,
    write_journal,
    write_segment,
)

T0 = epoch_us("2025-09-14T09:30:00")
PLOG = "/r/debug/plog/plog-3300_20250914093000120.log"


def plog_lines(count: int, errors: set[int], tag: str = "", start_us: int = T0) -> list[str]:
    """`count` INFO lines of a plog (some with a continuation line), with a coded HCCL error
    at each index of `errors`."""
    lines = []
    for number in range(count):
        if number in errors:
            body = f"[hccl.cc:9] [3303]notify wait timeout {tag}{number}, error code E30009"
            lines.append(cann_line("ERROR", "HCCL", 3300, start_us + number * 10_000_000, body))
        else:
            body = f"[trainer.cc:{number}] [3301]step {tag}{number} finished"
            lines.append(cann_line("INFO", "GE", 3300, start_us + number * 10_000_000, body))
            if number % 7 == 3:
                lines.append(f"    detail of step {tag}{number}")
    return lines


def read_events(directory: Path) -> tuple[dict[str, str], int]:
    """Every event the reader gives back (by id), and how many it found without context."""
    found: dict[str, str] = {}
    with JournalReader(directory) as reader:
        position = Position()
        while page := reader.event_rows_after(position, 7):  # pages cut between events
            found.update((id_, document) for _, id_, document in page)
            position = page[-1][0]
        lost = reader._contexts.lost if reader._contexts is not None else 0
    return found, lost


def context_of(document: str) -> dict[str, Any]:
    context: dict[str, Any] = json.loads(document)["ascend"]["finding"]["context"]
    return context


def test_the_journal_stores_a_reference_and_gives_back_the_rules_document(
    tmp_path: Path,
) -> None:
    plog = LogFile(PLOG, "node-a", plog_lines(200, {3, 80}))
    rows, made = rule_events_made([plog])
    references = [json.loads(row.document)["ascend"]["finding"]["context"] for row in rows]
    assert all(isinstance(ref["before"], int) for ref in references), references
    positions = {record.offset: index for index, record in enumerate(plog.records)}
    assert {ref["before"] for ref in references} == {
        min(positions[ref["at"]], 50) for ref in references
    }
    assert {ref["before"] for ref in references} == {3, 50}  # the errors at lines 3 and 80
    long = [row for row, ref in zip(rows, references, strict=True) if ref["before"] == 50]
    assert all(len(row.document) < len(made[row.id]) / 3 for row in long)
    write_journal(tmp_path, [plog], runs=9, segments=3)
    found, lost = read_events(tmp_path)
    assert found == made  # the same bytes as the rule's document
    assert lost == 0
    assert len(list_segments(tmp_path)) == 3


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    runs=st.integers(1, 40),
    segments=st.integers(1, 4),
    count=st.integers(1, 300),
)
def test_any_cut_into_blocks_and_segments_gives_back_every_context(
    tmp_path_factory: Any, seed: int, runs: int, segments: int, count: int
) -> None:
    rng = random.Random(seed)
    errors = {rng.randrange(count) for _ in range(rng.randint(1, 6))}
    plog = LogFile(PLOG, "node-a", plog_lines(count, errors))
    other = LogFile(PLOG.replace("3300", "3400"), "node-a", plog_lines(count, errors, "b"))
    directory = tmp_path_factory.mktemp("journal")
    contents = write_journal(
        directory, [plog, other], runs=runs, segments=min(segments, runs), rng=rng
    )
    found, lost = read_events(directory)
    assert found == contents.made
    assert lost == 0


def test_a_file_truncated_and_written_again_gives_the_context_of_its_new_text(
    tmp_path: Path,
) -> None:
    """copytruncate: the file starts over at offset 0 under the same key; offsets repeat, even
    inside one block. Each event gets its own records, not the earlier text at those offsets."""
    first = plog_lines(60, {40}, tag="old-")
    again = plog_lines(60, {40}, tag="new-", start_us=T0 + 3600_000_000)  # the same offsets
    whole = LogFile(PLOG, "node-a", first)
    tail = LogFile(PLOG, "node-a", again)
    records = whole.records + tail.records  # one stream, as the agent's rules see it
    whole.records = records
    rows, made = rule_events_made([whole])
    assert {"old-40", "new-40"} <= {
        tag for tag in ("old-40", "new-40") for r in rows if tag in r.document
    }
    for runs in (1, 2, 5):  # truncation inside one block, at a block's edge, and in between
        directory = tmp_path / f"runs-{runs}"
        write_journal(directory, [whole], runs=runs, events=rows)
        found, lost = read_events(directory)
        assert found == made, runs
        assert lost == 0
        new_event = next(doc for doc in found.values() if "new-40" in doc)
        before = context_of(new_event)["before"]
        assert before[-1].endswith("step new-39 finished")
        assert any("old-" in line for line in before)  # the 50 before reach into the old text


def test_events_of_journals_written_before_the_reference_are_read_as_they_are(
    tmp_path: Path,
) -> None:
    plog = LogFile(PLOG, "node-a", plog_lines(120, {30, 90}))
    rows, made = rule_events_made([plog])
    inline = [EventRow(**{**row.__dict__, "document": made[row.id]}) for row in rows]
    write_journal(tmp_path, [plog], runs=3, events=inline)
    found, lost = read_events(tmp_path)
    assert found == made
    assert lost == 0


def test_an_event_whose_records_are_gone_is_read_with_an_empty_context_that_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    plog = LogFile(PLOG, "node-a", plog_lines(100, {95}))
    rows, made = rule_events_made([plog])
    # The records in one segment; the event, written later, in the next one.
    write_journal(tmp_path, [plog], events=[])
    write_segment(tmp_path, [CommitBatch(events=rows)])
    (_, path), *_ = list_segments(tmp_path)
    path.unlink()  # retention took it while shipping was behind
    with caplog.at_level(logging.WARNING):
        found, lost = read_events(tmp_path)
    assert rows
    assert lost == len(rows)
    # Said once, with what was looked for and where (not "removed": it may be further back).
    (said,) = [
        r.getMessage() for r in caplog.records if "records around an event" in r.getMessage()
    ]
    assert f"offset {rows[0].offset}" in said and "segment 2 or the 3 before it" in said
    for row in rows:
        document = json.loads(found[row.id])
        LogRecord.model_validate(document)  # the published schema knows "lost"
        context = document["ascend"]["finding"].pop("context")
        assert context == {"before": [], "after": [], "lost": True}
        expected = json.loads(made[row.id])
        del expected["ascend"]["finding"]["context"]
        assert document == expected  # the rest of the event is whole


def test_an_event_whose_records_have_no_offsets_keeps_its_context_as_text() -> None:
    plog = LogFile(PLOG, "node-a", plog_lines(20, {10}))
    for record in plog.records:
        record.offset = None  # records that do not come from a file (standard input)
    rows, made = rule_events_made([plog])
    assert [row.document for row in rows] == [made[row.id] for row in rows]
    assert len(context_of(rows[0].document)["before"]) == 10
