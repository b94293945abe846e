"""The search-engine sink: a cursor reader of the journal that ships with bulk `create`.

Every item of a bulk response is classified: 2xx shipped, 409 already there (a replay: done);
429, 5xx and transport failures retried with capped, jittered backoff; any other 4xx written to
the dead-letter file with its reason, counted, and passed. A failure of the whole request (no
answer, 401 or 403 from the engine or a proxy) is no fault of its documents: they are retried,
and a 413 makes the requests smaller. The cursor moves past a page only when
every entry of it is shipped, already there, or dead-lettered, so a crash or an outage replays
from the cursor, and the deterministic ids make the replay add nothing. The journal is the
buffer: an unreachable engine slows this thread only, never the reading of logs. A full disk
stops nothing either: a refused document the dead-letter file cannot take is retried with its
page, and the cursor file is written when there is room (see journal.state_file).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
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


_SMALLEST_REQUEST_BYTES = 64 * 1024


@dataclass
class _Attempt:
    retry: dict[str, Action] = field(default_factory=dict)
    problem: str = "the engine is busy or down"
    too_large: bool = False
    """The engine (or a proxy) refused a request for its size: send smaller ones."""


def _request_problem(status: object, error: object) -> str:
    """Why a whole bulk request failed, in words that say what to check."""
    if status == 401:
        return (
            "the engine refused the credentials (401): check api_key_file, or username and "
            "password_file"
        )
    if status == 403:
        return (
            "the engine refused the request (403): the API key or user lacks a privilege on the "
            "logs-ascend.* data streams"
        )
    if status == 413:
        return "the request was too large (413)"
    if isinstance(status, int):
        return f"the engine failed the request ({status}): {error}"
    return f"no answer from the engine: {error}"


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
        self._chunk_docs = settings.chunk_docs
        self._chunk_bytes = settings.chunk_bytes
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
            if not self._save(at_once=True):
                log.warning(
                    "%s: the cursor is not saved (%s cannot be written): what was shipped since "
                    "its last write is sent again at the next start (the engine answers 409)",
                    self.name,
                    self._cursors.path,
                )
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
            attempt = self._send(pending)
            if not attempt.retry:
                break
            self._metrics.ship_retries.labels(self.name).inc(len(attempt.retry))
            self._metrics.ship_backlog.labels(self.name).set(self._wall() - self._caught_up_at)
            if attempt.too_large:
                # Not an overload: smaller requests can go at once.
                self._shrink_requests()
            else:
                delay = backoff * random.uniform(0.5, 1.0)
                log.warning(
                    "%s: %d of %d documents not accepted yet (%s); retrying in %.1f s",
                    self.name,
                    len(attempt.retry),
                    len(pending),
                    attempt.problem,
                    delay,
                )
                if self._stop.wait(delay):
                    raise StopShipping
                backoff = min(backoff * 2, self.settings.max_backoff_s)
            pending = attempt.retry
        self._metrics.last_shipment.labels(self.name).set(self._wall())

    def _send(self, pending: dict[str, Action]) -> _Attempt:
        """One pass of bulk requests over `pending`: what is left to retry, and why."""
        attempt = _Attempt()
        answered: set[str] = set()
        try:
            for _, item in self.engine.bulk(
                (action.bulk() for action in pending.values()), self._chunk_docs, self._chunk_bytes
            ):
                result = next(iter(item.values()))
                action = pending.get(str(result.get("_id")))
                if action is None:
                    continue
                answered.add(action.id)
                if "exception" in result:
                    self._request_failed(action, result, attempt)
                else:
                    self._classify(action, result, attempt)
        except self.engine.unreachable as error:
            # Raised mid-stream by elasticsearch-py's helper: whatever got no answer is retried.
            attempt.retry.update((i, a) for i, a in pending.items() if i not in answered)
            attempt.problem = f"cannot reach {', '.join(self.engine.connection.hosts)}: {error}"
        return attempt

    def _request_failed(self, action: Action, result: dict[str, Any], attempt: _Attempt) -> None:
        """The whole bulk request failed (the helpers give each of its items the request's
        status): the documents are not at fault, so they are retried, never dead-lettered —
        except a lone document a size limit refuses, which no retry will get through."""
        status = result.get("status")
        if status == 413 and self._chunk_docs == 1:
            self._dead_letter(action, 413, result.get("error"), attempt)
            return
        attempt.retry[action.id] = action
        attempt.too_large = attempt.too_large or status == 413
        attempt.problem = _request_problem(status, result.get("error"))

    def _shrink_requests(self) -> None:
        self._chunk_docs = max(1, self._chunk_docs // 2)
        self._chunk_bytes = max(_SMALLEST_REQUEST_BYTES, self._chunk_bytes // 2)
        log.warning(
            "%s: a bulk request was too large for the engine or a proxy in front of it (413); "
            "sending at most %d documents and %d bytes a request from now on",
            self.name,
            self._chunk_docs,
            self._chunk_bytes,
        )

    def _classify(self, action: Action, result: dict[str, Any], attempt: _Attempt) -> None:
        """Done (shipped, already there, dead-lettered), or left in `attempt` to retry."""
        status = result.get("status")
        if isinstance(status, int) and 200 <= status < 300:
            self._metrics.shipped.labels(self.name, "ok").inc()
        elif status == 409:
            self._metrics.shipped.labels(self.name, "duplicate").inc()
        elif not isinstance(status, int) or status == 429 or status >= 500:
            attempt.retry[action.id] = action
        else:
            self._dead_letter(action, status, result.get("error"), attempt)

    def _dead_letter(self, action: Action, status: int, reason: object, attempt: _Attempt) -> None:
        try:
            self._dead_letters.write(action.stream, action.id, status, reason, action.document)
        except OSError as error:
            # Kept nowhere yet, so the cursor must not pass it: it is sent again with the page
            # (refused again) until the dead-letter file has room.
            attempt.retry[action.id] = action
            attempt.problem = (
                f"a refused document cannot be kept in {self._dead_letters.path}: "
                f"{error.strerror or error}"
            )
            return
        self._metrics.shipped.labels(self.name, "dead_letter").inc()
        self._metrics.dead_letters.labels(self.name).inc()
        log.error(
            "%s: document %s refused by %s (%d): %s; kept in %s",
            self.name,
            action.id,
            action.stream,
            status,
            reason,
            self._dead_letters.path,
        )

    def _save(self, at_once: bool = False) -> bool:
        """Save the cursor; False when the disk refused it (it waits, see CursorStore)."""
        self._cursors.set(self.name, self.cursor)
        return self._cursors.save(at_once)
