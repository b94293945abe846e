"""An event as one line for people, from its journaled document (no schema needed)."""

from __future__ import annotations

import json
from typing import Any

from npuwatch.terminal import visible_line


def event_line(document: str) -> str:
    """`EVENT <severity> <what> [x<count>] <message> (<where>)`, every part from the document
    shown on the one line (terminal.visible_line). What an event lacks is left out or said in
    words, never a bare dash: a collective-failure event has no rule or severity (it is named
    by its kind), a device reading no file (its host and device say where)."""
    doc = json.loads(document)
    rule = _object(doc.get("rule"))
    ascend = _object(doc.get("ascend"))
    finding = _object(ascend.get("finding"))
    count = finding.get("count", 1)
    repeat = f" x{count}" if isinstance(count, int) and count > 1 else ""
    parts = [str(finding["severity"])] if finding.get("severity") else []
    parts.append(f"{_what(rule, ascend, doc)}{repeat}")
    if doc.get("message"):
        parts.append(str(doc["message"]))
    return visible_line(f"EVENT {' '.join(parts)} ({_where(doc, ascend)})")


def _what(rule: dict[str, Any], ascend: dict[str, Any], doc: dict[str, Any]) -> str:
    if rule.get("id"):
        return str(rule["id"])
    kind = _object(ascend.get("collective")).get("kind")
    if kind:
        return f"collective {kind}"
    return str(_object(doc.get("event")).get("dataset") or "event")


def _where(doc: dict[str, Any], ascend: dict[str, Any]) -> str:
    path = _object(_object(doc.get("log")).get("file")).get("path")
    if path:
        return str(path)
    place = []
    host = _object(doc.get("host")).get("name")
    if host:
        place.append(str(host))
    if ascend.get("device") is not None:
        place.append(f"device {ascend['device']}")
    pid = _object(doc.get("process")).get("pid")
    if pid is not None:
        place.append(f"pid {pid}")
    return ", ".join(place) or "no file"


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
