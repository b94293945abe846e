"""An event as one line for people, from its journaled document (no schema needed)."""

from __future__ import annotations

import json


def event_line(document: str) -> str:
    """`EVENT <severity> <rule id> [x<count>] <message> (<file>)`."""
    doc = json.loads(document)
    rule = doc.get("rule", {})
    finding = doc.get("ascend", {}).get("finding", {})
    count = finding.get("count", 1)
    repeat = f" x{count}" if count > 1 else ""
    path = doc.get("log", {}).get("file", {}).get("path", "-")
    return (
        f"EVENT {finding.get('severity', '-')} {rule.get('id', '-')}{repeat} "
        f"{doc.get('message', '')} ({path})"
    )
