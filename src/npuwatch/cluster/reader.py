"""Reading an index incrementally by the time the engine took each document in.

Every document the correlator reads carries `event.ingested`, stamped by the engine's ingest
pipeline. A round asks for everything ingested since `overlap` before the newest ingest time
seen so far, sorted by ingest time and document id, a page at a time (`search_after`), and
passes on only the documents it did not pass on at that same ingest time: a document indexed
late (an agent's backlog after an outage, a refresh not yet visible) is read in the next round,
and a document read twice is passed on once. The correlator's own clock plays no part but for
the first round, which starts `lookback` before now.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from npuwatch.sinks.search.engine import SearchEngine

_SORT = [{"event.ingested": {"order": "asc"}}, {"ascend.doc_id": {"order": "asc"}}]


class IngestReader:
    """New and changed documents of one index, round after round."""

    def __init__(
        self,
        engine: SearchEngine,
        index: str,
        query: dict[str, Any] | None,
        overlap_s: float,
        lookback_s: float,
        page: int = 1000,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._engine = engine
        self.index = index
        self._query = query
        self._overlap_ms = int(overlap_s * 1000)
        self._lookback_ms = int(lookback_s * 1000)
        self._page = page
        self._wall = wall
        self.newest_ms: int | None = None
        """The newest ingest time read (epoch milliseconds)."""
        self._passed: dict[str, int] = {}
        """Documents passed on within the overlap, and the ingest time they had."""

    def read(self) -> list[dict[str, Any]]:
        """The documents ingested since the last round that were not passed on as they are."""
        since = (
            self.newest_ms - self._overlap_ms
            if self.newest_ms is not None
            else int(self._wall() * 1000) - self._lookback_ms
        )
        found: list[dict[str, Any]] = []
        after: list[Any] | None = None
        while True:
            hits = self._engine.search(self.index, self._body(since, after))
            for hit in hits:
                ingested = int(hit["sort"][0])
                id_ = str(hit["_id"])
                if self._passed.get(id_) == ingested:
                    continue
                self._passed[id_] = ingested
                found.append(hit)
                if self.newest_ms is None or ingested > self.newest_ms:
                    self.newest_ms = ingested
            if len(hits) < self._page:
                break
            after = hits[-1]["sort"]
        self._forget_before(since)
        return found

    def _body(self, since_ms: int, after: list[Any] | None) -> dict[str, Any]:
        filters: list[dict[str, Any]] = [
            {"range": {"event.ingested": {"gte": since_ms, "format": "epoch_millis"}}}
        ]
        if self._query is not None:
            filters.append(self._query)
        body: dict[str, Any] = {
            "size": self._page,
            "sort": _SORT,
            "query": {"bool": {"filter": filters}},
            "seq_no_primary_term": True,
        }
        if after is not None:
            body["search_after"] = after
        return body

    def _forget_before(self, since_ms: int) -> None:
        """What was passed on before the window cannot come again in it."""
        if len(self._passed) > 4 * self._page:
            self._passed = {i: t for i, t in self._passed.items() if t >= since_ms}
