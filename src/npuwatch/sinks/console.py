"""Records as text on a terminal or a pipe: JSON lines for programs, a table for people."""

from __future__ import annotations

import json
from datetime import timedelta, tzinfo

from npuwatch.records import EPOCH, Record
from npuwatch.terminal import Palette, visible_line


def to_json_line(record: Record) -> str:
    """One record as one line of JSON, with nested ECS objects."""
    return json.dumps(record.to_document(), ensure_ascii=False, separators=(",", ":"))


def local_time(epoch_us: int | None, zone: tzinfo) -> str:
    """A record time for people: local wall time in `zone`, to the microsecond."""
    if epoch_us is None:
        return "-" * 26
    moment = (EPOCH + timedelta(microseconds=epoch_us)).astimezone(zone)
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")


class TableFormatter:
    """Fixed columns: time, level, module, pid, code, message (first line)."""

    HEADER = f"{'TIME':26} {'LEVEL':9} {'MODULE':10} {'PID':>8} {'CODE':7} MESSAGE"

    def __init__(self, zone: tzinfo, palette: Palette) -> None:
        self._zone = zone
        self._palette = palette

    def header(self) -> str:
        return self._palette.bold(self.HEADER)

    def format(self, record: Record) -> str:
        """One line; what came from the log is shown, never acted on (terminal.visible_line)."""
        level = visible_line(record.level or "-")
        message = record.message
        first_line, _, rest = message.partition("\n")
        first_line = visible_line(first_line)
        if rest:
            first_line += self._palette.dim(f"  (+{rest.count(chr(10)) + 1} lines)")
        pid = "-" if record.pid is None else str(record.pid)
        code = record.error_code or (str(record.runtime_codes[0]) if record.runtime_codes else "-")
        return (
            f"{local_time(record.timestamp_us, self._zone)} "
            f"{self._palette.level(level, f'{level:9}')} "
            f"{visible_line(record.logger or '-'):10} {pid:>8} {visible_line(code):7} {first_line}"
        )
