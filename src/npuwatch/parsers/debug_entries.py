"""The debugging tools' findings as journal entries: one record per finding, logged by the tool.

The agent imports the tools' outputs (agent/debug_stage.py) and keeps each finding as a
telemetry entry, like a profiling operator: its original text is one compact JSON object with
everything it says, and `debug_record` builds the record back from that text. The logger names
the tool family, so that `npuwatch grep --module PRECISION|MONITOR|SANITIZER` finds them and
rules match them:

- PRECISION: a compare's first failing operator and its other failures, each overflow
  (first Inf/NaN) node, each API the accuracy checker failed;
- MONITOR: each msprobe anomaly alert, each step with NaN/inf statistics, each spike, and one
  summary per rank (its last step and gradient norm);
- SANITIZER: each msSanitizer error or warning, each AI Core error msaicerr analysed.

An entry's fields: `tool` (precision, overflow, acc_check, monitor, sanitizer, msaicerr),
`what` (first_failure, failure, overflow, failed_api, anomaly, nan, spike, rank_summary, a
sanitizer kind such as illegal_read, aicore_error), `level`, `message`, `source` (the file or
folder, relative to the output), `rank` and `device` when known, and what the finding carries.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from npuwatch.bounded_numbers import fits
from npuwatch.records import Record

DEBUG_KIND = "debug"
PRECISION_LOGGER = "PRECISION"
MONITOR_LOGGER = "MONITOR"
SANITIZER_LOGGER = "SANITIZER"
LOGGERS = (PRECISION_LOGGER, MONITOR_LOGGER, SANITIZER_LOGGER)

_RECORD_FIELDS = frozenset({"level", "logger", "message", "device", "rank"})
"""Fields that are the record's own; the rest is under `ascend.debug`."""


def entry_text(fields: Mapping[str, Any]) -> str:
    """The original text of an entry: its fields as one compact JSON object."""
    return json.dumps(dict(fields), separators=(",", ":"), ensure_ascii=False)


def debug_record(original: str, fields: Mapping[str, Any]) -> Record:
    """The record of one entry (`fields`: the JSON object `original` holds)."""
    record = Record(original, DEBUG_KIND)
    level = fields.get("level")
    record.level = level if isinstance(level, str) else "INFO"
    logger = fields.get("logger")
    record.logger = logger if isinstance(logger, str) else None
    record.message = str(fields.get("message") or "")
    record.device = _integer(fields.get("device"))
    record.rank = _integer(fields.get("rank"))
    record.ascend_extra = {
        "debug": {key: value for key, value in fields.items() if key not in _RECORD_FIELDS}
    }
    return record


def _integer(value: Any) -> int | None:
    # A device or rank past 64 bits is none: no journal column or document field holds it.
    return value if isinstance(value, int) and not isinstance(value, bool) and fits(value) else None
