"""Named cursors: how far each journal reader (a sink) has taken the journal.

Kept in one small JSON file, written atomically (temp file, fsync, rename, fsync the folder). A
file left empty, cut short or full of NUL bytes by a crash is not fatal: the cursors it held are
restarted at the beginning of the journal, which repeats entries but loses none (the sinks write
with deterministic ids, so a repeat overwrites), and the agent says so once. A full disk stops
no sink: the cursors wait in memory and the file is written when there is room (state_file).
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path

from npuwatch.journal.reader import Position
from npuwatch.state_file import StateFile

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Cursor:
    blocks: Position = field(default_factory=Position)
    events: Position = field(default_factory=Position)
    states: Position = field(default_factory=Position)


class CursorStore:
    """Loads and saves the cursors of every reader in one file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.recovered = False
        """True when the file was unreadable at load and the cursors were reset."""
        self._cursors: dict[str, Cursor] = self._load()
        self._lock = threading.Lock()
        self._file = StateFile(
            path,
            "sends again what the sinks sent since the last write (the console prints it again)",
        )

    def _load(self) -> dict[str, Cursor]:
        try:
            text = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        try:
            data = json.loads(text.decode("utf-8"))
            return {
                name: Cursor(
                    Position(*value["blocks"]),
                    Position(*value["events"]),
                    # A file of a version before states: the sink has read none.
                    Position(*value.get("states", (0, 0))),
                )
                for name, value in data["cursors"].items()
            }
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            self.recovered = True
            log.warning(
                "cursor file %s is unreadable (%s, %d bytes); every sink restarts at the "
                "beginning of the journal (entries may be sent again, none is lost)",
                self.path,
                type(error).__name__,
                len(text),
            )
            return {}

    def get(self, name: str) -> Cursor | None:
        return self._cursors.get(name)

    def set(self, name: str, cursor: Cursor) -> None:
        with self._lock:
            self._cursors[name] = cursor

    def save(self, at_once: bool = False) -> bool:
        """Write every reader's cursor (one store is shared by the sinks' threads); True when
        the file holds them. A full disk makes it False, and the cursors wait (see StateFile)."""
        with self._lock:
            return self._file.save(self._encoded(), at_once)

    def _encoded(self) -> bytes:
        data = {
            "version": 1,
            "cursors": {
                name: {
                    "blocks": [c.blocks.segment, c.blocks.row],
                    "events": [c.events.segment, c.events.row],
                    "states": [c.states.segment, c.states.row],
                }
                for name, c in sorted(self._cursors.items())
            },
        }
        return json.dumps(data, indent=1).encode()
