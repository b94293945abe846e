"""Keeping the topology index small: deleting the documents the correlator forgot.

The agents replace their process documents and heartbeats but never delete them: a job's
processes leave one document per process and communicator behind when they end, and a host
taken out of the cluster leaves its last heartbeat. The correlator forgets them once they are
older than its lookback and no recent heartbeat lists them (feed.py), and deletes them here, so
that a restarted correlator, which reads the whole topology index (a process of a job started
weeks ago is still needed), reads what is alive and the last lookback's worth of the rest.

A delete is conditional on the version read: a document an agent wrote again meanwhile (a
process that spoke again after a long silence) is kept, and read again in the next round.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from npuwatch.cluster.feed import Version
from npuwatch.sinks.search.engine import SearchEngine

_CHUNK_DOCS = 1000
_CHUNK_BYTES = 4 * 1024 * 1024


@dataclass
class Deletion:
    """What one deletion did: documents deleted, kept (written again since they were read, or
    already deleted by another correlator), and failed (left for a later correlator)."""

    deleted: int = 0
    kept: int = 0
    failed: int = 0
    first_failure: str = ""


def delete_forgotten(
    engine: SearchEngine, index: str, documents: dict[str, Version | None]
) -> Deletion:
    """Delete each document still at the version read; one without a known version is kept."""
    done = Deletion()
    versioned = {id_: version for id_, version in documents.items() if version is not None}
    done.kept = len(documents) - len(versioned)
    if not versioned:
        return done
    for ok, item in engine.bulk(_actions(index, versioned), _CHUNK_DOCS, _CHUNK_BYTES):
        answer = item.get("delete") or {}
        status = answer.get("status")
        if ok:
            done.deleted += 1
        elif status in (404, 409):  # gone already, or an agent wrote it again
            done.kept += 1
        else:
            done.failed += 1
            done.first_failure = done.first_failure or _reason(answer)
    return done


def _actions(index: str, documents: dict[str, Version]) -> Iterator[dict[str, Any]]:
    for id_, (seq_no, primary_term) in documents.items():
        yield {
            "_op_type": "delete",
            "_index": index,
            "_id": id_,
            "if_seq_no": seq_no,
            "if_primary_term": primary_term,
        }


def _reason(answer: dict[str, Any]) -> str:
    error = answer.get("error")
    if isinstance(error, dict):
        return f"HTTP {answer.get('status')}: {error.get('type')}: {error.get('reason')}"
    return f"HTTP {answer.get('status')}: {error or answer.get('exception') or 'no answer'}"
