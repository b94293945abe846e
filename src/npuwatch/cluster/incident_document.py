"""An incident as the search engine keeps it: the verdict, whether it is settled, its story.

The verdict is what `scan --json` says of the incident, with the victims counted by host and
only the first of them listed (a job's incident names every waiting rank: thousands of places
would make a document Kibana cannot show). Around it: whether it is provisional or closed, when
it was first decided and last changed, and its revisions, each with its time and the parts of
the verdict that changed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from npuwatch.correlation.incident import Incident, Place
from npuwatch.correlation.kinds import KIND_OF_CODE, KINDS
from npuwatch.parsers.hccl.model import Evidence
from npuwatch.parsers.hccl.shipped import document_id
from npuwatch.records import format_timestamp

VICTIMS_LISTED = 256
REVISIONS_KEPT = 50
VERDICT_KEYS = (
    "kind",
    "faultdiag_code",
    "communicator",
    "root_cause",
    "waiting_chain",
    "victims_count",
    "unheard",
    "confidence",
    "recovered",
    "provisional",
    "closed",
)
"""What a revision compares: a change of any of these is a new revision."""


def incident_id(communicator: str | None, first_us: int | None) -> str:
    """The id an incident is first written under (kept while its verdict is revised)."""
    return document_id("incident", communicator or "-", first_us)


def _time(us: int | None) -> str | None:
    return None if us is None else format_timestamp(us)


def verdict(incident: Incident, provisional: bool) -> dict[str, Any]:
    """The verdict part of an incident document."""
    found = incident.to_dict()
    victims = found.pop("victims")
    by_host = incident.victims_by_host()
    found.update(
        {
            "provisional": provisional,
            "last": _time(incident.last_us),
            "settle_by": _time(incident.settle_us),
            "ranks": {"expected": incident.ranks_expected, "reported": incident.ranks_reported},
            "victims_count": len(victims),
            "victims_by_host": [{"host": host, "count": n} for host, n in by_host.items()],
            "victims": victims[:VICTIMS_LISTED],
            "hosts": sorted({p.host for p in [*incident.root_cause, *incident.victims] if p.host}),
        }
    )
    return found


def changed_keys(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> list[str]:
    if before is None:
        return ["verdict"]
    return [key for key in VERDICT_KEYS if before.get(key) != after.get(key)]


STORY_KEYS = ("revisions", "first_verdict", "updated", "liveness")
"""What an incident document says of its past and of the agents now, beside the verdict."""


def listing_changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    """Whether the stored incident lists anything else than `after` where the verdict is the
    same: a victim whose rank and device came in since, more evidence, a later last line. Such
    a document is written again, without a revision: what it lists must be what the correlator
    knows, or an operator sees a waiting rank without its device long after its facts are in."""
    stored = json.loads(json.dumps(after))  # as the engine gives it back: lists, not tuples
    return any(before.get(key) != stored[key] for key in stored if key not in STORY_KEYS)


def verdict_changed(before: Mapping[str, Any], found: Mapping[str, Any]) -> bool:
    """Whether a new verdict says anything else than the stored one (closing aside)."""
    return any(before.get(key) != found.get(key) for key in VERDICT_KEYS if key != "closed")


def incident_document(
    id_: str,
    found: dict[str, Any],
    before: Mapping[str, Any] | None,
    now_us: int,
    close_reason: str | None,
    liveness: Sequence[str] = (),
) -> dict[str, Any]:
    """The document of incident `id_` with the verdict `found`, revised from `before` (the
    incident part of the document as stored, None for a new incident)."""
    incident = dict(found)
    incident["id"] = id_
    incident["closed"] = close_reason is not None
    incident["close_reason"] = close_reason
    incident["liveness"] = list(liveness)
    changed = changed_keys(before, incident)
    revisions = list((before or {}).get("revisions", ()))
    if changed:
        revision = {
            "at": format_timestamp(now_us),
            "changed": changed,
            "provisional": found["provisional"],
        }
        if before is not None and before.get("summary") != incident.get("summary"):
            revision["was"] = before.get("summary")  # what the verdict said until then
        revisions.append(revision)
    incident["revisions"] = revisions[-REVISIONS_KEPT:]
    incident["first_verdict"] = (before or {}).get("first_verdict") or format_timestamp(now_us)
    incident["updated"] = (
        format_timestamp(now_us) if changed else (before or {}).get("updated")
    ) or format_timestamp(now_us)
    return {
        "@timestamp": found.get("first") or format_timestamp(now_us),
        "event": {"kind": "state", "dataset": "ascend.incident", "module": "npuwatch"},
        "message": found.get("summary", ""),
        "ascend": {"doc_id": id_, "incident": incident},
    }


def incident_from_document(stored: Mapping[str, Any]) -> Incident:
    """An incident as stored (the `ascend.incident` part), for its report; the victims beyond
    the first ones listed are counted, not named."""
    kind = _kind(stored)
    status = None
    if stored.get("closed"):
        status = f"closed: {stored.get('close_reason') or 'closed'}"
    elif stored.get("provisional"):
        status = "provisional"
    evidence = [
        Evidence(
            item.get("file"), item.get("line"), str(item.get("text", "")), None, item.get("offset")
        )
        for item in stored.get("evidence", ())
    ]
    by_host = {str(item["host"]): int(item["count"]) for item in stored.get("victims_by_host", ())}
    return Incident(
        kind=kind,
        summary=str(stored.get("summary", "")),
        communicator=stored.get("communicator"),
        root_cause=[_place(p) for p in stored.get("root_cause", ())],
        waiting_chain=[_place(p) for p in stored.get("waiting_chain", ())],
        victims=[_place(p) for p in stored.get("victims", ())],
        unheard=[_place(p) for p in stored.get("unheard", ())],
        evidence=evidence,
        confidence=float(stored.get("confidence") or 0.0),
        first_us=iso_us(stored.get("first")),
        notes=[*stored.get("liveness", ()), *stored.get("notes", ())],
        recovered=bool(stored.get("recovered")),
        last_us=iso_us(stored.get("last")),
        status=status,
        victims_counted=(int(stored.get("victims_count") or 0), by_host),
    )


def _kind(stored: Mapping[str, Any]) -> str:
    """The stored kind, else the kind of its FaultDiag code (documents written before kinds
    were names of their own), else "errors only"."""
    kind = stored.get("kind")
    if isinstance(kind, str) and kind in KINDS:
        return kind
    code = stored.get("faultdiag_code")
    return (
        KIND_OF_CODE.get(code, "errors_without_timeout")
        if isinstance(code, int)
        else "errors_without_timeout"
    )


def _place(item: Mapping[str, Any]) -> Place:
    def number(name: str) -> int | None:
        value = item.get(name)
        return None if value is None else int(value)

    return Place(
        host=item.get("host"),
        device=number("device"),
        logic_device=number("logic_device"),
        rank=number("rank"),
        communicator=item.get("communicator"),
        pid=number("pid"),
        address=item.get("address"),
        has_logs=bool(item.get("has_logs", True)),
    )


def iso_us(text: object) -> int | None:
    """Microseconds since the epoch of a stored ISO time (None for anything else)."""
    if not isinstance(text, str):
        return None
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1_000_000)
