"""The search-engine sink: ships pages of the journal with bulk `create`.

Every item of a bulk response is classified: 2xx shipped, 409 already there (a replay: done);
429, 5xx and transport failures retried with capped, jittered backoff; any other 4xx written to
the dead-letter file with its reason, counted, and passed. A failure of the whole request (no
answer, 401 or 403 from the engine or a proxy) is no fault of its documents: they are retried,
and a 413 makes the requests smaller. The cursor moves past a page only when
every entry of it is shipped, already there, or dead-lettered, so a crash or an outage replays
from the cursor, and the deterministic ids make the replay add nothing. The journal is the
buffer: an unreachable engine slows this thread only, never the reading of logs. A full disk
stops nothing either: a refused document the dead-letter file cannot take is retried with its
page. The journal follower (sinks/follower.py) runs it with its cursor.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from npuwatch.metrics import SelfMetrics
from npuwatch.sinks.search.dead_letters import DeadLetters
from npuwatch.sinks.search.documents import Action, block_actions, event_action, state_action
from npuwatch.sinks.search.engine import SearchEngine, connection_failure, describe_error
from npuwatch.sinks.sink import Page, Pause, SinkTraits

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
    return f"no answer from the engine: {connection_failure(str(error)) or error}"


@dataclass
class _Failing:
    since: float
    retries: int = 0
    problem: str | None = None


class SearchSink:
    """Ships pages of the journal to one search engine."""

    def __init__(
        self,
        engine: SearchEngine,
        metrics: SelfMetrics,
        dead_letters: DeadLetters,
        settings: ShipSettings,
        name: str = "elasticsearch",
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.engine = engine
        self.name = name
        self.settings = settings
        self.traits = SinkTraits(
            reads_states=True,
            # What a stop writes last (every process document, the failure blocks it closes)
            # is what the correlator needs to finish a verdict: shipped before leaving while the
            # engine answers, within the stop's time; an engine that is down costs one try.
            drains_at_stop=True,
            blocks_per_page=settings.blocks_per_page,
            events_per_page=settings.events_per_page,
            first_pause_s=settings.initial_backoff_s,
            max_pause_s=settings.max_backoff_s,
            repeated_after_restart="what was shipped since its last write is sent again (the "
            "engine answers 409)",
        )
        self._metrics = metrics
        self._dead_letters = dead_letters
        self._wall = wall
        self._chunk_docs = settings.chunk_docs
        self._chunk_bytes = settings.chunk_bytes
        self._failing: _Failing | None = None
        """Since when, how often and why shipping has been retried: said once when it starts
        and once when it ends, not at every retry (a line every few seconds while an engine
        is down for an hour)."""

    def deliver(self, page: Page, pause: Pause) -> None:
        actions: list[Action] = []
        skipped = 0
        for _, block in page.blocks:
            for action in block_actions(
                block, self.settings.namespace, self.settings.host, self.settings.skipped_levels
            ):
                if action is None:
                    skipped += 1
                else:
                    actions.append(action)
        namespace = self.settings.namespace
        actions.extend(event_action(i, doc, namespace) for _, i, doc in page.events)
        actions.extend(state_action(row, namespace) for _, row in page.states)
        self.ship(actions, pause)
        if skipped:
            self._metrics.shipped.labels(self.name, "below_min_level").inc(skipped)

    def ship(self, actions: list[Action], pause: Pause) -> None:
        """Send `actions` until every one is shipped, already there, or dead-lettered."""
        pending = {action.id: action for action in actions}
        while pending:
            attempt = self._send(pending)
            if not attempt.retry:
                break
            self._metrics.ship_retries.labels(self.name).inc(len(attempt.retry))
            if attempt.too_large:
                # Not an overload: smaller requests can go at once.
                self._shrink_requests()
            else:
                pause(partial(self._announce_retry, attempt, len(pending)))
            pending = attempt.retry
        self._metrics.last_shipment.labels(self.name).set(self._wall())
        failing, self._failing = self._failing, None
        if failing is not None:  # (the loop ends only when every document is done)
            log.warning(
                "%s: shipping again after %d retries over %.0f s (the last: %s)",
                self.name,
                failing.retries,
                self._wall() - failing.since,
                failing.problem,
            )

    def _announce_retry(self, attempt: _Attempt, tried: int, delay: float) -> None:
        """The first retry, and a retry for another reason, in a line; the others counted."""
        failing = self._failing
        if failing is None:
            failing = self._failing = _Failing(self._wall())
        failing.retries += 1
        if attempt.problem == failing.problem:
            log.debug("%s: retry %d in %.1f s", self.name, failing.retries, delay)
            return
        failing.problem = attempt.problem
        log.warning(
            "%s: %d of %d documents not accepted yet (%s); retrying, with backoff (the next "
            "in %.1f s), until they are: said again when it changes or ends",
            self.name,
            len(attempt.retry),
            tried,
            attempt.problem,
            delay,
        )

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
            hosts = ", ".join(self.engine.connection.hosts)
            attempt.problem = f"cannot reach {hosts}: {describe_error(error)}"
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
