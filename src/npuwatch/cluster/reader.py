"""Reading an index incrementally by the time the engine took each document in.

Every document the correlator reads carries `event.ingested`, stamped by the engine's ingest
pipeline. A round reads everything ingested after the newest ingest time seen so far, sorted by
ingest time and document id, a page at a time (`search_after`), and looks again `overlap` back
from that time for documents it has not passed on: a document indexed late (an agent's backlog
after an outage, a slow bulk request, a refresh not yet visible) is read in the next round, and
a document read twice is passed on once. The look back asks for ids and ingest times only, and
the sources of the few it had not seen: a thousand agents' heartbeats in the overlap are not
read again every round. The correlator's own clock plays no part but for the first round, which
starts `lookback` before now, or reads the whole index (no lookback: the topology, which the
correlator keeps small by deleting what it forgets).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from npuwatch.sinks.search.engine import SearchEngine

_SORT = [
    {"event.ingested": {"order": "asc", "unmapped_type": "date"}},
    # An index whose documents have no doc id yet (rule events only, or none) sorts all the same.
    {"ascend.doc_id": {"order": "asc", "unmapped_type": "keyword"}},
]


class IngestReader:
    """New and changed documents of one index, round after round."""

    def __init__(
        self,
        engine: SearchEngine,
        index: str,
        query: dict[str, Any] | None,
        overlap_s: float,
        lookback_s: float | None,
        page: int = 1000,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._engine = engine
        self.index = index
        self._query = query
        self._overlap_ms = int(overlap_s * 1000)
        self._lookback_ms = None if lookback_s is None else int(lookback_s * 1000)
        self._page = page
        self._wall = wall
        self.newest_ms: int | None = None
        """The newest ingest time read (epoch milliseconds)."""
        self._passed: dict[str, int] = {}
        """Documents passed on within the overlap, and the ingest time they had."""

    def read(self) -> list[dict[str, Any]]:
        """The documents ingested since the last round that were not passed on as they are."""
        newest = self.newest_ms
        if newest is None:
            if self._lookback_ms is None:
                return self._sources(None)
            since = int(self._wall() * 1000) - self._lookback_ms
            found = self._sources({"gte": since})
        else:
            since = newest - self._overlap_ms
            found = []
            unseen = self._unseen(since, newest)
            for start in range(0, len(unseen), self._page):
                found += self._sources(None, unseen[start : start + self._page])
            found += self._sources({"gt": newest})
        self._forget_before(since)
        return found

    def _unseen(self, since_ms: int, until_ms: int) -> list[str]:
        """Ids of the documents in the overlap that were not passed on at their ingest time."""
        body = self._body({"gte": since_ms, "lte": until_ms})
        body["_source"] = False
        unseen: list[str] = []
        while True:
            hits = self._engine.search(self.index, body)
            unseen += [
                str(hit["_id"])
                for hit in hits
                if self._passed.get(str(hit["_id"])) != int(hit["sort"][0])
            ]
            if len(hits) < self._page:
                return unseen
            body["search_after"] = hits[-1]["sort"]

    def _sources(
        self, ingested: dict[str, int] | None, ids: list[str] | None = None
    ) -> list[dict[str, Any]]:
        """The documents in an ingest-time range, or of these ids, not passed on as they are."""
        body = self._body(ingested, ids)
        found: list[dict[str, Any]] = []
        while True:
            hits = self._engine.search(self.index, body)
            for hit in hits:
                ingested_ms = int(hit["sort"][0])
                id_ = str(hit["_id"])
                if self._passed.get(id_) == ingested_ms:
                    continue
                self._passed[id_] = ingested_ms
                found.append(hit)
                if self.newest_ms is None or ingested_ms > self.newest_ms:
                    self.newest_ms = ingested_ms
            if len(hits) < self._page:
                return found
            body["search_after"] = hits[-1]["sort"]

    def _body(
        self, ingested: dict[str, int] | None, ids: list[str] | None = None
    ) -> dict[str, Any]:
        filters: list[dict[str, Any]] = []
        if ingested is not None:
            filters.append({"range": {"event.ingested": {**ingested, "format": "epoch_millis"}}})
        if ids is not None:
            filters.append({"ids": {"values": ids}})
        if self._query is not None:
            filters.append(self._query)
        return {
            "size": self._page,
            "sort": _SORT,
            "query": {"bool": {"filter": filters}},
            "seq_no_primary_term": True,
        }

    def _forget_before(self, since_ms: int) -> None:
        """What was passed on before the window cannot come again in it."""
        if len(self._passed) > 4 * self._page:
            self._passed = {i: t for i, t in self._passed.items() if t >= since_ms}
