"""The correlator's rounds: read what the agents shipped, decide, write the incidents.

Each round reads the topology index (process documents, heartbeats) and the collective events
incrementally (reader.py), feeds what is new to the root-cause engine (feed.py), asks it for
its verdicts when anything came in, and writes each incident whose verdict changed, whose
provisional verdict settled, or which closes (its processes recovered, or nothing changed for
the quiet period). Every write is conditional on the version read (another correlator may run
beside this one); a conflict reads the incident again and the next round writes over it only
if it still says something else. Nothing is kept but what the search engine holds: a restarted
correlator reads it all again (the whole topology index: the processes of a job that started
weeks ago; the events and incidents of the lookback) and finds its incidents by their ids. At
the first round and every hour after, what is older than the lookback and not alive is forgotten,
and its topology documents are deleted (forgetting.py), so that the next start reads little more
than the processes still running.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from npuwatch.cluster.feed import CorrelationInput, Version
from npuwatch.cluster.forgetting import delete_forgotten
from npuwatch.cluster.incident_book import IncidentBook, Tracked
from npuwatch.cluster.incident_document import (
    changed_keys,
    incident_document,
    incident_id,
    iso_us,
    listing_changed,
    verdict,
    verdict_changed,
)
from npuwatch.cluster.liveness import liveness_notes
from npuwatch.cluster.metrics import CorrelatorMetrics, RootCauseSeries
from npuwatch.cluster.reader import IngestReader
from npuwatch.correlation.correlator import Correlator
from npuwatch.correlation.incident import Incident
from npuwatch.parsers.hccl.shipped import TOPOLOGY_STREAM
from npuwatch.sinks.search.engine import SearchEngine, describe_error, status_of
from npuwatch.sinks.search.streams import events_stream, state_index

log = logging.getLogger("npuwatch.correlate")

INCIDENTS_STREAM = "incidents"
_BOOK_PAGE = 1000


@dataclass(frozen=True)
class CorrelateSettings:
    namespace: str = "default"
    poll_interval_s: float = 5.0
    overlap_s: float = 120.0
    lookback_s: float = 86400.0
    quiet_period_s: float = 1800.0
    compact_interval_s: float = 3600.0
    topology_wait_s: float = 120.0
    """How long after its first verdict an incident that names a place whose process facts are
    not in (a rank "without logs") stays provisional: the agent of its host may not have
    shipped them yet; past this, the place is taken as one that left no logs."""


@dataclass
class Round:
    """What one round did."""

    documents: int = 0
    items: int = 0
    written: int = 0


class CorrelatorService:
    """Reads, decides and writes, a round at a time."""

    def __init__(
        self,
        engine: SearchEngine,
        settings: CorrelateSettings,
        metrics: CorrelatorMetrics,
        wall: Callable[[], float] = time.time,
        input_is_complete: bool = False,
    ) -> None:
        """`input_is_complete`: one round over everything shipped (`correlate --once`), read as
        `correlate --journal` reads the journals; the service's rounds read a cluster still
        writing, where a healthy rank is as silent as a dead one (errors_only.py)."""
        self._engine = engine
        self._complete = input_is_complete
        self._settings = settings
        self._metrics = metrics
        self._wall = wall
        namespace = settings.namespace
        self.incidents_index = state_index(INCIDENTS_STREAM, namespace)
        self.topology_index = state_index(TOPOLOGY_STREAM, namespace)
        self._readers = [
            # All of it at a start, whatever its age: forgetting keeps it small.
            IngestReader(engine, self.topology_index, None, settings.overlap_s, None, wall=wall),
            IngestReader(
                engine,
                events_stream(namespace),
                {"exists": {"field": "ascend.collective.kind"}},
                settings.overlap_s,
                settings.lookback_s,
                wall=wall,
            ),
        ]
        self.input = CorrelationInput()
        self._correlator = Correlator(input_is_complete=self._complete)
        self.book = IncidentBook()
        self.decided: list[str] = []
        """The ids of the incidents the last round's verdicts are written under."""
        self._verdicts: list[Incident] = []
        self._dirty = False
        self._book_read_ms: int | None = None
        """When the incidents index was last read (wall, ms); None before the first round."""
        self._next_compaction = wall()  # the first round's, then every compact_interval
        self._read_at = wall()
        """When a round last read every index to its end."""
        self._failing: str | None = None
        """Why the rounds are failing, while they are."""
        self._failed_rounds = 0

    # -- a round ------------------------------------------------------------------------------

    def round(self) -> Round:
        done = Round()
        now_us = self._now_us()
        self._load_book(now_us)
        self._read(done)
        if self._dirty:
            try:
                self._verdicts = self._correlator.incidents()
            except Exception:  # a bug in the engine must not stop the service
                self._metrics.errors.labels("engine").inc()
                log.exception("the root-cause engine failed; its verdicts are not revised")
            self._dirty = False
        done.written = self._write_all(self._now_us())
        self._compact()
        self._show()
        return done

    def attempt(self) -> Round | None:
        """A round that may fail (the engine down): counted, and tried again next time; said
        when the failures begin or change, and when a round works again (not every poll while
        an engine is down for an hour); the read lag says how long it has been failing."""
        try:
            done = self.round()
        except Exception as error:
            self._metrics.errors.labels("read").inc()
            problem = describe_error(error)
            if problem != self._failing:
                log.warning(
                    "correlation round failed (%s); trying again every round, said again when "
                    "it changes or ends",
                    problem,
                )
            self._failing = problem
            self._failed_rounds += 1
            return None
        finally:
            self._metrics.read_lag.set(max(self._wall() - self._read_at, 0.0))
        if self._failing is not None:
            log.warning(
                "correlation rounds work again after %d failed (the last: %s)",
                self._failed_rounds,
                self._failing,
            )
            self._failing, self._failed_rounds = None, 0
        return done

    def run(self, stop: threading.Event, ready: Callable[[], object] = lambda: None) -> None:
        """Rounds every poll interval until `stop` is set."""
        first = True
        while not stop.is_set():
            self.attempt()
            if first:
                ready()
                first = False
            stop.wait(self._settings.poll_interval_s)

    # -- reading ------------------------------------------------------------------------------

    def _load_book(self, now_us: int) -> None:
        """Every incident written within the lookback at the first round, and those written
        since the last look at every other one (by another correlator, or `correlate --once`
        beside this one: a verdict of the same fault is then written under one id, the other
        merged into it): the ids to revise, and their versions."""
        read_at = int(self._wall() * 1000)
        if self._book_read_ms is None:
            since = read_at - int(self._settings.lookback_s * 1000)
        else:
            since = self._book_read_ms - int(self._settings.overlap_s * 1000)
        # By when they were written (the engine's ingest time), not by the fault's time in the
        # logs: an incident of a backfill of old logs is revised, not written a second time.
        body: dict[str, Any] = {
            "size": _BOOK_PAGE,
            "query": {"range": {"event.ingested": {"gte": since, "format": "epoch_millis"}}},
            # (unmapped_type: an incidents index made before its first incident sorts empty)
            "sort": [
                {"event.ingested": {"order": "asc", "unmapped_type": "date"}},
                {"ascend.doc_id": {"order": "asc", "unmapped_type": "keyword"}},
            ],
            "seq_no_primary_term": True,
        }
        while True:
            hits = self._engine.search(self.incidents_index, body)
            for hit in hits:
                self.book.load(hit, now_us)
                self._metrics.documents.labels("incident").inc()
            if len(hits) < _BOOK_PAGE:
                break
            body["search_after"] = hits[-1]["sort"]
        self._book_read_ms = read_at

    def _read(self, done: Round) -> None:
        for reader in self._readers:
            hits = reader.read()
            done.documents += len(hits)
            for hit in hits:
                items = self.input.take(hit)
                self._metrics.documents.labels(_kind_of(hit)).inc()
                if items:
                    self._correlator.add_all(items)
                    done.items += len(items)
                    self._dirty = True
        self._read_at = self._wall()
        self._metrics.processes.set(len(self.input.processes))

    # -- writing ------------------------------------------------------------------------------

    def _write_all(self, now_us: int) -> int:
        written = 0
        taken: set[str] = set()
        decided: list[tuple[str, Incident]] = []
        for incident in self._verdicts:
            tracked = self.book.match(incident, taken)
            id_ = (
                tracked.id
                if tracked is not None
                else incident_id(incident.communicator, incident.first_us)
            )
            taken.add(id_)
            written += self._revise(id_, tracked, incident, now_us)
            decided.append((id_, incident))
        self.decided = [id_ for id_, _ in decided]
        for tracked in self.book.open():
            if tracked.id in taken:
                continue
            # An incident of a fault a verdict of this round is written under another id: an
            # early verdict (a root cause first named "without logs", a first failure that
            # moved), or one another correlator wrote at the same time. Merged. (Two faults of
            # one communicator each have a verdict of their own; another communicator is
            # another fault, even under the same pids: incident_book.)
            same = [i for i, found in decided if self.book.same_fault(tracked, found)]
            into = same[0] if same else None
            if into is not None:
                written += self._close(tracked, now_us, f"merged into {into}")
            elif self._quiet(tracked, now_us):
                written += self._close(tracked, now_us)
        return written

    def _provisional(self, tracked: Tracked | None, incident: Incident, now_us: int) -> bool:
        """Whether a verdict may still change: until every rank reported or the fault's settle
        time has passed, counted from when the correlator first gave a verdict on it (not by
        the time in the logs, which a backfill or a host's wrong clock puts days back); and,
        while it names a place whose process facts are not in, until the topology wait has
        passed too."""
        first_verdict_us = now_us
        if tracked is not None:
            first_verdict_us = iso_us(tracked.incident.get("first_verdict")) or now_us
        if not incident.settled(now_us, since_us=first_verdict_us):
            return True
        places = [*incident.root_cause, *incident.waiting_chain]
        missing_facts = any(not place.has_logs for place in places)
        waited_us = now_us - first_verdict_us
        return missing_facts and waited_us < self._settings.topology_wait_s * 1e6

    def _revise(self, id_: str, tracked: Tracked | None, incident: Incident, now_us: int) -> int:
        found = verdict(incident, provisional=self._provisional(tracked, incident, now_us))
        before = tracked.incident if tracked is not None else None
        reason = None
        if incident.recovered:
            reason = "recovered"
        elif (
            tracked is not None
            and self._quiet(tracked, now_us)
            and not verdict_changed(tracked.incident, found)
        ):
            reason = "quiet"
        notes = liveness_notes(incident, self.input, now_us)
        document = incident_document(id_, found, before, now_us, reason, notes)
        revised = document["ascend"]["incident"]
        if before is not None and not (
            changed_keys(before, revised) or listing_changed(before, revised)
        ):
            return 0
        result = "created" if tracked is None else "closed" if reason else "revised"
        if not self._put(id_, tracked, document, now_us, result):
            return 0
        if tracked is None and incident.first_us is not None:
            self._metrics.first_verdict.observe(max(now_us - incident.first_us, 0) / 1e6)
        log.info("incident %s %s: %s", id_, result, found["summary"])
        return 1

    def _close(self, tracked: Tracked, now_us: int, reason: str = "quiet") -> int:
        """An incident no verdict speaks of any more: closed as it is, quiet for the period or
        merged into the incident a verdict of the same fault is written under."""
        found = dict(tracked.incident)
        document = incident_document(
            tracked.id, found, tracked.incident, now_us, reason, found.get("liveness", ())
        )
        return 1 if self._put(tracked.id, tracked, document, now_us, "closed") else 0

    def _quiet(self, tracked: Tracked, now_us: int) -> bool:
        return now_us - tracked.changed_at_us >= self._settings.quiet_period_s * 1e6

    def _put(
        self,
        id_: str,
        tracked: Tracked | None,
        document: dict[str, Any],
        now_us: int,
        result: str,
    ) -> bool:
        version = tracked.version if tracked is not None else None
        try:
            written = self._engine.put_document(self.incidents_index, id_, document, version)
        except Exception as error:
            if status_of(error) == 409:  # another correlator wrote it first
                self._metrics.writes.labels("conflict").inc()
                stored = self._engine.get(self.incidents_index, id_)
                if stored is not None:
                    self.book.load(stored, now_us)
                return False
            self._metrics.errors.labels("write").inc()
            log.warning("cannot write incident %s (%s); trying again", id_, describe_error(error))
            return False
        self._metrics.writes.labels(result).inc()
        self.book.tracked[id_] = Tracked(id_, written, document["ascend"]["incident"], now_us)
        return True

    # -- upkeep -------------------------------------------------------------------------------

    def _compact(self) -> None:
        """Drop what no fault can still need, and make the engine again from the rest."""
        now = self._wall()
        if now < self._next_compaction:
            return
        self._next_compaction = now + self._settings.compact_interval_s
        cutoff = int((now - self._settings.lookback_s) * 1_000_000)
        forgotten = self.input.forget_before(cutoff)
        if forgotten:
            self._correlator = Correlator(input_is_complete=self._complete)
            self._correlator.add_all(self.input.everything())
            self._dirty = True
        if forgotten.documents:
            self._delete(forgotten.documents)

    def _delete(self, documents: dict[str, Version | None]) -> None:
        """The forgotten documents out of the topology index. What fails is left there: the
        next correlator to start reads it and forgets it again."""
        try:
            done = delete_forgotten(self._engine, self.topology_index, documents)
        except Exception as error:
            self._metrics.errors.labels("forget").inc()
            log.warning("cannot delete forgotten topology documents (%s)", describe_error(error))
            return
        self._metrics.forgotten.labels("deleted").inc(done.deleted)
        self._metrics.forgotten.labels("kept").inc(done.kept)
        if done.failed:
            self._metrics.errors.labels("forget").inc()
            log.warning(
                "%d forgotten topology documents not deleted (%s)", done.failed, done.first_failure
            )
        log.info(
            "forgot %d topology documents of processes and agents gone for over %s s: "
            "%d deleted, %d kept",
            len(documents),
            f"{self._settings.lookback_s:.0f}",
            done.deleted,
            done.kept,
        )

    def _show(self) -> None:
        series: list[RootCauseSeries] = []
        open_by_kind: dict[str, int] = {}
        for tracked in self.book.open():
            incident = tracked.incident
            open_by_kind[tracked.kind] = open_by_kind.get(tracked.kind, 0) + 1
            roots = incident.get("root_cause") or [{}]
            for place in roots:
                series.append(
                    RootCauseSeries(
                        incident=tracked.id,
                        kind=tracked.kind,
                        host=str(place.get("host") or ""),
                        npu=_label(place.get("device")),
                        rank=_label(place.get("rank")),
                        provisional=bool(incident.get("provisional")),
                        victims=int(incident.get("victims_count") or 0),
                    )
                )
        self._metrics.incidents.show(series, open_by_kind)

    def _now_us(self) -> int:
        return int(self._wall() * 1_000_000)


def _kind_of(hit: dict[str, Any]) -> str:
    dataset = ((hit.get("_source") or {}).get("event") or {}).get("dataset")
    return {
        "ascend.topology": "process",
        "ascend.heartbeat": "heartbeat",
    }.get(str(dataset), "event")


def _label(value: object) -> str:
    return "" if value is None else str(value)
