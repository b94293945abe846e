"""The search-engine sink: a cursor reader of the journal that ships with bulk `create`.

Every item of a bulk response is classified: 2xx shipped, 409 already there (a replay: done);
429, 5xx and transport failures retried with capped, jittered backoff; any other 4xx written to
the dead-letter file with its reason, counted, and passed. The cursor moves past a page only when
every entry of it is shipped, already there, or dead-lettered, so a crash or an outage replays
from the cursor, and the deterministic ids make the replay add nothing. The journal is the
buffer: an unreachable engine slows this thread only, never the reading of logs.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from npuwatch.journal.cursors import Cursor, CursorStore
from npuwatch.journal.reader import JournalReader
from npuwatch.metrics import SelfMetrics
from npuwatch.sinks.elasticsearch.dead_letters import DeadLetters
from npuwatch.sinks.elasticsearch.documents import Action, block_actions, event_action
from npuwatch.sinks.elasticsearch.engine import SearchEngine

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ShipSettings:
    namespace: str = "default"
    host: str = "localhost"
    chunk_docs: int = 2000
    chunk_bytes: int = 8 * 1024 * 1024
    blocks_per_page: int = 2
    events_per_page: int = 500
    initial_backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    save_interval_s: float = 1.0
    skipped_levels: frozenset[str] = frozenset()
    """Log levels left in the journal, not shipped (from the sink's `min_level`)."""


class StopShipping(Exception):
    """The agent is stopping while a page is still being retried: leave the cursor where it is."""


class SearchShipper:
    def __init__(
        self,
        engine: SearchEngine,
        journal_directory: Path,
        cursors: CursorStore,
        committed: threading.Condition,
        stop: threading.Event,
        metrics: SelfMetrics,
        dead_letters: DeadLetters,
        settings: ShipSettings,
        name: str = "elasticsearch",
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.engine = engine
        self.name = name
        self.settings = settings
        self._reader = JournalReader(journal_directory)
        self._cursors = cursors
        self._committed = committed
        self._stop = stop
        self._metrics = metrics
        self._dead_letters = dead_letters
        self._wall = wall
        self.cursor = cursors.get(name) or Cursor()
        self._caught_up_at = wall()
        self.thread = threading.Thread(target=self._run, name=f"npuwatch-{name}", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def close(self) -> None:
        self._reader.close()

    def _run(self) -> None:
        """Ship until the agent stops. On stop, the page being shipped is finished (or left, if
        the engine is down) and the cursor saved; the backlog waits in the journal."""
        last_save = time.monotonic()
        try:
            while not self._stop.is_set():
                try:
                    moved = self.pump()
                except StopShipping:
                    return
                except Exception:  # a bug: the thread dies, the agent notices and exits
                    log.exception("%s sink failed", self.name)
                    raise
                if time.monotonic() - last_save >= self.settings.save_interval_s:
                    self._save()
                    last_save = time.monotonic()
                if not moved:
                    with self._committed:
                        self._committed.wait(0.5)
        finally:
            self._save()
            self._reader.close()

    def pump(self) -> bool:
        """Ship one page of blocks and one page of events after the cursor; True when there was
        anything to ship."""
        moved = False
        page = self._reader.blocks_after(self.cursor.blocks, self.settings.blocks_per_page)
        if page:
            actions: list[Action] = []
            skipped = 0
            for _, block in page:
                for action in block_actions(
                    block, self.settings.namespace, self.settings.host, self.settings.skipped_levels
                ):
                    if action is None:
                        skipped += 1
                    else:
                        actions.append(action)
            self.ship(actions)
            if skipped:
                self._metrics.shipped.labels(self.name, "below_min_level").inc(skipped)
            self.cursor = Cursor(page[-1][0], self.cursor.events)
            moved = True
        events = self._reader.event_rows_after(self.cursor.events, self.settings.events_per_page)
        if events:
            self.ship([event_action(i, doc, self.settings.namespace) for _, i, doc in events])
            self.cursor = Cursor(self.cursor.blocks, events[-1][0])
            moved = True
        now = self._wall()
        if not moved:
            self._caught_up_at = now
        self._metrics.ship_backlog.labels(self.name).set(now - self._caught_up_at)
        return moved

    def ship(self, actions: list[Action]) -> None:
        """Send `actions` until every one is shipped, already there, or dead-lettered."""
        pending = {action.id: action for action in actions}
        backoff = self.settings.initial_backoff_s
        while pending:
            retry: dict[str, Action] = {}
            for _, item in self.engine.bulk(
                (action.bulk() for action in pending.values()),
                self.settings.chunk_docs,
                self.settings.chunk_bytes,
            ):
                result = next(iter(item.values()))
                action = pending.get(str(result.get("_id")))
                if action is None:
                    continue
                outcome = self._classify(action, result)
                if outcome == "retry":
                    retry[action.id] = action
            if retry:
                self._metrics.ship_retries.labels(self.name).inc(len(retry))
                delay = backoff * random.uniform(0.5, 1.0)
                log.warning(
                    "%s: %d of %d documents not accepted yet (the engine is busy or down); "
                    "retrying in %.1f s",
                    self.name,
                    len(retry),
                    len(pending),
                    delay,
                )
                self._metrics.ship_backlog.labels(self.name).set(self._wall() - self._caught_up_at)
                if self._stop.wait(delay):
                    raise StopShipping
                backoff = min(backoff * 2, self.settings.max_backoff_s)
            pending = retry
        self._metrics.last_shipment.labels(self.name).set(self._wall())

    def _classify(self, action: Action, result: dict[str, Any]) -> str:
        status = result.get("status")
        if isinstance(status, int) and 200 <= status < 300:
            self._metrics.shipped.labels(self.name, "ok").inc()
            return "done"
        if status == 409:
            self._metrics.shipped.labels(self.name, "duplicate").inc()
            return "done"
        if not isinstance(status, int) or status == 429 or status >= 500:
            return "retry"
        self._metrics.shipped.labels(self.name, "dead_letter").inc()
        self._metrics.dead_letters.labels(self.name).inc()
        reason = result.get("error")
        self._dead_letters.write(action.stream, action.id, status, reason, action.document)
        log.error(
            "%s: document %s refused by %s (%d): %s; kept in %s",
            self.name,
            action.id,
            action.stream,
            status,
            reason,
            self._dead_letters.path,
        )
        return "done"

    def _save(self) -> None:
        self._cursors.set(self.name, self.cursor)
        self._cursors.save()
