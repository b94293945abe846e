"""Findings: events grouped by rule, and the verdict — the most likely first failure.

The verdict is the earliest event of severity error or critical whose rule is not a symptom
(timeouts and wrappers that report a failure elsewhere), preferring specific rules to catch-alls
at the same moment. That is the habit of experienced operators: look past the timeouts on every
rank for the first thing that actually broke.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from npuwatch.records import format_timestamp
from npuwatch.rules.events import Event
from npuwatch.rules.model import SEVERITY_RANK

_FAILURE = SEVERITY_RANK["error"]


@dataclass
class Finding:
    """All events of one rule."""

    rule_id: str
    title: str
    severity: str
    layer: str
    category: str
    advice: str
    symptom: bool
    events: list[Event] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(event.count for event in self.events)

    @property
    def first_us(self) -> int | None:
        times = [e.first_us for e in self.events if e.first_us is not None]
        return min(times) if times else None

    @property
    def last_us(self) -> int | None:
        times = [e.last_us for e in self.events if e.last_us is not None]
        return max(times) if times else None

    def first_per_place(self) -> list[Event]:
        """The first event of each place (host, device, and process or rank)."""
        seen: dict[tuple[Any, ...], Event] = {}
        for event in sorted(self.events, key=_event_time):
            seen.setdefault(place(event), event)
        return list(seen.values())

    def rank_per_place(self) -> dict[tuple[Any, ...], int]:
        """The rank of each place that any of its events names: a process's plog lines do not
        say its rank, its console lines do."""
        ranks: dict[tuple[Any, ...], int] = {}
        for event in self.events:
            if event.rank is not None:
                ranks.setdefault(place(event), event.rank)
        return ranks

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule_id,
            "title": self.title,
            "severity": self.severity,
            "layer": self.layer,
            "category": self.category,
            "symptom": self.symptom,
            "advice": self.advice,
            "count": self.count,
            "first": _iso(self.first_us),
            "last": _iso(self.last_us),
            "occurrences": [describe(event) for event in self.first_per_place()],
        }


@dataclass
class Verdict:
    event: Event
    symptoms_after: int
    """Events of symptom rules at or after it: how much of the noise it explains."""

    def to_dict(self) -> dict[str, Any]:
        return {**describe(self.event), "symptoms_after": self.symptoms_after}


def group(events: list[Event]) -> list[Finding]:
    """Findings by rule, most severe first, then earliest first."""
    findings: dict[str, Finding] = {}
    for event in events:
        spec = event.rule.spec
        finding = findings.get(spec.id)
        if finding is None:
            finding = findings[spec.id] = Finding(
                spec.id,
                spec.title,
                spec.severity,
                spec.layer,
                spec.category,
                spec.advice,
                spec.symptom,
            )
        finding.events.append(event)
    return sorted(
        findings.values(),
        key=lambda f: (-SEVERITY_RANK[f.severity], f.first_us is None, f.first_us or 0),
    )


def verdict(events: list[Event], among: list[Event] | None = None) -> Verdict | None:
    """The verdict over `events`; with `among`, the cause is taken from those events only (the
    root cause of a collective incident), and the symptoms are still counted over all."""
    failures = [e for e in events if e.severity_rank >= _FAILURE and e.first_us is not None]
    candidates = failures
    if among is not None:
        candidates = [e for e in among if e.severity_rank >= _FAILURE and e.first_us is not None]
    if not candidates:
        return None
    causes = [e for e in candidates if not e.rule.spec.symptom] or candidates
    first = min(causes, key=lambda e: (e.first_us, e.rule.spec.fallback, -e.severity_rank))
    symptoms = sum(
        1 for e in failures if e.rule.spec.symptom and (e.first_us or 0) >= (first.first_us or 0)
    )
    return Verdict(first, symptoms)


def place(event: Event) -> tuple[Any, ...]:
    """Where an event happened: host, device and process, or the rank when the line names no
    process (the c10 lines of torch's ranks carry no pid, and must not fall together)."""
    source = event.source
    host = source.host if source else None
    device = event.device if event.device is not None else (source.device if source else None)
    if event.pid is None and event.rank is not None:
        return (host, device, None, event.rank)
    return (host, device, event.pid, None)


def describe(event: Event) -> dict[str, Any]:
    source = event.source
    host, device, pid, _ = place(event)
    rank = event.rank
    return {
        "rule": event.rule.id,
        "title": event.rule.spec.title,
        "severity": event.severity,
        "timestamp": _iso(event.first_us),
        "count": event.count,
        "host": host,
        "device": device,
        "pid": pid,
        "process_name": event.process_name,
        "rank": rank,
        "file": source.path if source else None,
        "error_codes": list(event.error_codes),
        "fields": event.fields,
        "message": event.trigger.message,
        "original": event.original,
        "advice": event.rule.spec.advice,
        "context": {"before": event.before, "after": event.after},
    }


def _event_time(event: Event) -> tuple[bool, int]:
    return (event.first_us is None, event.first_us or 0)


def _iso(epoch_us: int | None) -> str | None:
    return None if epoch_us is None else format_timestamp(epoch_us)
