"""The words CANN writes that npuwatch sorts by: log levels and module names, in one place.

This module imports nothing: `npuwatch grep` reads the notable levels on a path timed against
`rg` (docs/adr/0002-grep-start-up.md).
"""

from __future__ import annotations

from typing import Literal

SLOG_LEVELS = frozenset(
    {
        "DEBUG",
        "INFO",
        "WARNING",
        "ERROR",
        "NULL",
        "EVENT",
        "TRACE",
        "OPLOG",
        "EXCEPTION",
        "CRITICAL",
    }
)
"""The levels a CANN log line may carry in its header (formats doc §1.2)."""

ERROR_LEVELS = frozenset({"ERROR", "EXCEPTION", "CRITICAL", "FATAL"})
"""Levels of records that count as errors (FATAL comes from neighbouring formats)."""

NOTABLE_LEVELS = frozenset({"WARNING", "WARN", *ERROR_LEVELS, "EVENT"})
"""Records at these levels (and any record carrying an error code) get a row of their own in the
journal's index, so that questions about them never open a block."""

QUIET_LEVELS = frozenset({"DEBUG", "INFO", "EVENT", "TRACE", "OPLOG", "NULL"})
"""Levels whose records are not searched for numeric ACL codes: in them a six-digit number is a
size or a counter far more often than an error code, and the search costs on every line."""

LABEL_LEVELS = SLOG_LEVELS | ERROR_LEVELS
"""The values of the `level` label of the ascend_* metrics (anything else is `other`)."""

LEVEL_RANKS = {
    "TRACE": 0,
    "DEBUG": 0,
    "INFO": 1,
    # What the journal indexes as notable (WARNING, EVENT…) ranks with warnings, and the error
    # levels above them.
    **dict.fromkeys(NOTABLE_LEVELS, 2),
    **dict.fromkeys(ERROR_LEVELS, 3),
}
"""How severe each level is, for a sink's `min_level`."""

ShippedLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]
"""The levels a sink's `min_level` may name."""


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


CANN_MODULES = _words(
    # log_types.h
    "SLOG IDEDD SCC HCCL FMK CCU DVPP RUNTIME CCE HDC DRV NET HIXL DEVMM KERNEL LIBMEDIA CCECPU "
    "ROS HCCP ROCE TEFUSION PROFILING DP APP TS TSDUMP AICPU LP TDT FE MD MB ME IMU IMP GE CAMERA "
    "ASCENDCL TEEOS ISP SIS HSM DSS PROCMGR BBOX AIVECTOR TBE FV PYPTO TUNE HSS FFTS OP UDF HICAID "
    "TSYNC AUDIO TPRT ASCENDCKERNEL ASYS ATRACE RTC SYSMONITOR AML ADETECT "
    # firmware, host tools
    "TSCH LPM MCU IDEDH "
    # MindSpore's own logger (the modules the default rules name)
    "DEVICE SESSION PIPELINE "
    # npuwatch's own log lines
    "NPUWATCH"
)
"""Every module name CANN (and the tools beside it) writes in a header: the values of the
`module` label of the ascend_* metrics (anything else is `other`)."""

CHATTY_MODULES = _words(
    "RUNTIME GE HCCL DRV TDT ASCENDCL IDEDD PROFILING ATRACE HCCP FE AICPU CCECPU TEFUSION TSCH "
    "KERNEL FMK DVPP IMP"
)
"""The modules that write most of a busy host's lines: a rule keyed on one of them is dearer
to test than one keyed on a rarer module."""
assert CHATTY_MODULES <= CANN_MODULES
