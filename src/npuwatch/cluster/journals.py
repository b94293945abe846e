"""The incidents of several hosts' journals, without a search engine (`correlate --journal`).

Each journal gives its agent's process documents (the latest state of each) and collective
events, as the agent would have shipped them; the correlator takes them journal after journal,
in the order the journals were named, as `CorrelationInput` takes search hits. The journals are
read on several processes (`process_pool`) when asked: each sends back its documents' text, and
the correlator is fed in the same order whatever worker finished first, so the incidents are the
same for any number of processes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from npuwatch.cluster.feed import CorrelationInput
from npuwatch.correlation.correlator import Correlator
from npuwatch.correlation.incident import Incident
from npuwatch.journal.reader import JournalReader, Position
from npuwatch.process_pool import forked_map

EVENT_ROWS_READ = 1024


class JournalUnreadable(Exception):
    """A journal that cannot be read at all (permission, a database that is busy); damage is
    read around by the reader, with a warning naming the segment."""


def collective_documents(directory: Path) -> list[tuple[str, str]]:
    """(id, document) of the journal's latest process states, then of its collective events,
    in journal order; JournalUnreadable saying why when the journal cannot be read."""
    found: list[tuple[str, str]] = []
    try:
        with JournalReader(directory) as reader:
            found.extend((row.id, row.document) for row in reader.latest_states().values())
            position = Position()
            while rows := reader.event_rows_after(position, EVENT_ROWS_READ):
                found.extend((id_, doc) for _, id_, doc in rows if '"collective"' in doc)
                position = rows[-1][0]
    except PermissionError as error:
        raise JournalUnreadable(
            f"cannot read the journal at {directory}: {error.strerror or error}"
        ) from None
    except sqlite3.Error as error:  # no damage (that is read around): busy, say
        raise JournalUnreadable(f"cannot read the journal at {directory}: {error}") from None
    return found


def journal_incidents(
    directories: Sequence[Path], jobs: int = 1
) -> tuple[list[Incident], list[str]]:
    """The incidents of the journals, and the problems of documents that could not be read."""
    if jobs > 1 and len(directories) > 1:
        documents = _read_apart(directories, jobs)
    else:
        documents = [collective_documents(directory) for directory in directories]
    fed = CorrelationInput()
    correlator = Correlator()
    for journal in documents:
        for id_, document in journal:
            correlator.add_all(fed.take(_hit(id_, document)))
    return correlator.incidents(), fed.problems


def _read_apart(directories: Sequence[Path], jobs: int) -> list[list[tuple[str, str]]]:
    def read(index: int) -> tuple[list[tuple[str, str]], str | None]:
        try:
            return collective_documents(directories[index]), None
        except JournalUnreadable as problem:
            return [], str(problem)

    found: dict[int, list[tuple[str, str]]] = {}
    for index, (documents, problem) in forked_map(read, len(directories), jobs):
        if problem is not None:
            raise JournalUnreadable(problem)
        found[index] = documents
    return [found[index] for index in range(len(directories))]


def _hit(id_: str, document: str) -> dict[str, Any]:
    return {"_id": id_, "_index": "journal", "_source": json.loads(document)}
