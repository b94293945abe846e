"""Documents the search engine refused for good (a mapping conflict, a malformed field): one
JSON line each with why, so that an operator can fix the cause and send them again."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any


class DeadLetters:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def write(self, index: str, doc_id: str, status: int, reason: Any, document: Any) -> None:
        line = json.dumps(
            {
                "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "index": index,
                "id": doc_id,
                "status": status,
                "reason": reason,
                "document": document,
            },
            ensure_ascii=False,
            default=str,
        )
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as out:
                out.write(line + "\n")
                out.flush()
                os.fsync(out.fileno())  # the cursor moves past these documents next

    def lines(self) -> list[dict[str, Any]]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]
