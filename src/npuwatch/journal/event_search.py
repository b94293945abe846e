"""The events of a journal that answer a `grep` question (`npuwatch grep --events`)."""

from __future__ import annotations

from collections.abc import Iterator

from npuwatch.journal.event_context import EventContexts
from npuwatch.journal.question import (
    Directory,
    Question,
    Where,
    add_field_filters,
    leave_out_damaged,
    open_segments,
)
from npuwatch.journal.row_text import RowTextError


def search_events(directory: Directory, question: Question) -> Iterator[str]:
    """The events (JSON documents, as their rules made them) that answer `question`, each once
    however often journaled. The pattern is searched in the whole document, context included."""
    seen: set[str] = set()
    contexts = EventContexts(directory)
    try:
        for segment in open_segments(directory):
            where = Where()
            if question.categories:
                where.any_of("category", sorted(question.categories))
            if question.codes:
                where.any_of("code", sorted(question.codes))
            add_field_filters(where, question, "", host_column="host")
            rows = segment.query(
                f"SELECT id, document FROM events WHERE {where.sql()} ORDER BY seq",
                where.parameters,
            )
            for event_id, stored in rows:
                if event_id in seen:
                    continue
                seen.add(str(event_id))
                try:
                    text = segment.texts.decode(stored)
                except RowTextError as error:
                    leave_out_damaged(segment.sequence, error)
                    continue
                document = contexts.complete(segment.sequence, text)
                if question.pattern is not None and question.pattern.search(document) is None:
                    continue
                yield document
    finally:
        contexts.close()
