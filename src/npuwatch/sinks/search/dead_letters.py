"""Documents the search engine refused for good (a mapping conflict, a malformed field): one
JSON line each with why, so that an operator can fix the cause and send them again.

The file holds whole documents (log lines), so it is 0600 in a 0700 folder. A line the disk
cuts short is taken back, so that a full disk leaves the file readable and the line is written
whole when the write is tried again.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from npuwatch.private_files import create_private, private_directory


class DeadLetters:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def write(self, index: str, doc_id: str, status: int, reason: Any, document: Any) -> None:
        """Append one refused document; raises OSError (and leaves the file as it was) when
        the disk refuses."""
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
        data = memoryview((line + "\n").encode("utf-8"))
        with self._lock:
            private_directory(self.path.parent, tighten=False)
            descriptor = create_private(self.path, os.O_WRONLY | os.O_APPEND)
            try:
                size = os.fstat(descriptor).st_size
                try:
                    while data:
                        data = data[os.write(descriptor, data) :]
                    os.fsync(descriptor)  # the cursor moves past these documents next
                except OSError:
                    with contextlib.suppress(OSError):
                        os.ftruncate(descriptor, size)
                    raise
            finally:
                os.close(descriptor)

    def lines(self) -> list[dict[str, Any]]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]
