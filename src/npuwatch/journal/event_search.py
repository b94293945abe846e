"""The events of a journal that answer a `grep` question (`npuwatch grep --events`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from npuwatch.journal.damage import DamageNotice
from npuwatch.journal.event_context import EventContexts, is_document
from npuwatch.journal.question import (
    Directory,
    Question,
    ReadOnlySegment,
    Where,
    add_field_filters,
    open_segments,
    say_on_stderr,
)
from npuwatch.journal.row_text import RowTextError


def _knows_when_journaled(segment: ReadOnlySegment) -> bool:
    """Whether the segment's events keep when they were journaled (not one made by 0.1; a
    segment without an events table yet has none to leave out)."""
    columns = {row[1] for row in segment.query("PRAGMA table_info(events)", ())}
    return not columns or "written_us" in columns


def search_events(
    directory: Directory,
    question: Question,
    notice: DamageNotice | None = None,
    say: Callable[[str], None] = say_on_stderr,
) -> Iterator[str]:
    """The events (JSON documents, as their rules made them) that answer `question`, each once
    however often journaled. The pattern is searched in the whole document, context included.
    What a damaged segment does not let be read is left out, and told once per segment to
    `notice` (by default, a line on standard error)."""
    notice = notice if notice is not None else DamageNotice(say_on_stderr)
    seen: set[str] = set()
    undated = 0
    contexts = EventContexts(directory, notice=notice)
    try:
        for segment in open_segments(directory, notice):
            where = Where()
            if question.categories:
                where.any_of("category", sorted(question.categories))
            if question.codes:
                where.any_of("code", sorted(question.codes))
            add_field_filters(where, question, "", host_column="host", written_column="written_us")
            if question.by_journal_time and not _knows_when_journaled(segment):
                undated += 1
                continue
            rows = segment.rows_after(
                f"SELECT seq, id, document FROM events WHERE seq >= ? AND {where.sql()} "
                "ORDER BY seq LIMIT ?",
                where.parameters,
            )
            for seq, event_id, stored in rows:
                if event_id in seen:
                    continue
                seen.add(str(event_id))
                try:
                    text = segment.texts.decode(stored)
                except RowTextError as error:
                    segment.damaged(error)
                    continue
                if not is_document(text):
                    segment.damaged(f"event {seq} is not a JSON document")
                    continue
                document = contexts.complete(segment.sequence, text)
                if question.pattern is not None and question.pattern.search(document) is None:
                    continue
                yield document
    finally:
        contexts.close()
    if undated:
        say(
            f"{undated} journal segment(s) made by npuwatch 0.1 do not keep when their events "
            "were journaled: their events are left out (their records are not)"
        )
