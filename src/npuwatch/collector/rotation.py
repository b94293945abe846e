"""How CANN rotates a process's log: it starts the next file and writes no more to the one before.

A plog or device log is named `<kind>-<pid>_<stamp>.log` (`plog-2667457_20251210204038191.log`:
the stamp is when the file was started, to the millisecond). When a file reaches its size
bound, CANN opens the next one of the same process, with a later stamp, and the one before is
complete: its last record will get no continuation line. The tailer hands that record on at once
rather than after the idle flush (a `kill -9` in between, with the old file deleted by the next
rotation before the restart, lost it).
"""

from __future__ import annotations

import os
import re

_ROTATED_NAME = re.compile(r"^(?P<family>.+)_(?P<stamp>\d{14,20})\.log$")


def family_of(path: str) -> tuple[str, int] | None:
    """(folder and name before the stamp, the stamp) of a CANN log's path; None for a name of
    another kind."""
    folder, name = os.path.split(path)
    match = _ROTATED_NAME.match(name)
    if match is None:
        return None
    return f"{folder}{os.sep}{match['family']}", int(match["stamp"])
