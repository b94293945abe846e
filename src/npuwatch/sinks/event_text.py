"""An event as one line for people, from its journaled document (no schema needed)."""

from __future__ import annotations

import json
from typing import Any

from npuwatch.terminal import visible_line


def event_line(document: str) -> str:
    """`EVENT <severity> <rule id> [x<count>] <message> (<file>)`, every part from the document
    shown on the one line (terminal.visible_line)."""
    doc = json.loads(document)
    rule = _object(doc.get("rule"))
    finding = _object(_object(doc.get("ascend")).get("finding"))
    count = finding.get("count", 1)
    repeat = f" x{count}" if isinstance(count, int) and count > 1 else ""
    path = _object(_object(doc.get("log")).get("file")).get("path", "-")
    parts = (finding.get("severity", "-"), f"{rule.get('id', '-')}{repeat}", doc.get("message", ""))
    return visible_line(f"EVENT {' '.join(map(str, parts))} ({path})")


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
