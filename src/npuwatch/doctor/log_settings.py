"""The Logs checks of the environment: the ASCEND_* variables that decide what CANN logs.

Meanings and defaults are those of CANN's runtime docs and libslog's own start-up lines
(formats doc ascend-log-formats.md §7): debug logs default to ERROR, a module override of a
malformed form is ignored as a whole, each process keeps 10 files of 20 MiB per folder.
"""

from __future__ import annotations

from collections.abc import Mapping

from npuwatch.doctor.report import Check, Status
from npuwatch.doctor.wording import human_bytes

LEVELS = {0: "DEBUG", 1: "INFO", 2: "WARNING", 3: "ERROR", 4: "NULL"}
DEFAULT_LEVEL = 3
DEFAULT_FILE_NUM = 10
FILE_NUM_RANGE = (1, 1000)
FILE_SIZE_MIB = 20
_QUIETER = (
    "export ASCEND_GLOBAL_LOG_LEVEL=3 (ERROR) on production hosts; DEBUG/INFO only while "
    "investigating"
)


def log_setting_checks(environ: Mapping[str, str]) -> list[Check]:
    """One check per log variable, in the order a user would set them."""
    return [
        global_level_check(environ),
        module_level_check(environ),
        process_log_path_check(environ),
        host_file_num_check(environ),
        print_to_stdout_check(environ),
        event_enable_check(environ),
    ]


def _check(
    name: str, status: Status, detail: str, action: str | None, value: str | None, **facts: object
) -> Check:
    key = "log." + name.removeprefix("ASCEND_").lower()
    return Check(key, "logs", name, status, detail, action, {"value": value, **facts})


def _level(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() and int(text) in LEVELS else None


def global_level_check(environ: Mapping[str, str]) -> Check:
    name = "ASCEND_GLOBAL_LOG_LEVEL"
    value = environ.get(name)
    if not value or not value.strip():
        return _check(name, "ok", "unset: ERROR (3), the default", None, value, level=DEFAULT_LEVEL)
    level = _level(value)
    if level is None:
        return _check(
            name,
            "warn",
            f"{value!r} is not a level from 0 (DEBUG) to 4 (NULL): CANN will not use it",
            "set 3 (ERROR) or unset it",
            value,
            level=None,
        )
    described = f"{level} = {LEVELS[level]}"
    if level == 0:
        detail = f"{described}: tens of MB/s of plog on a busy host — DEBUG fills disks"
        return _check(name, "warn", detail, _QUIETER, value, level=level)
    if level == 1:
        detail = f"{described}: every INFO line of every module goes to plog; disks fill fast"
        return _check(name, "warn", detail, _QUIETER, value, level=level)
    if level == 4:
        return _check(
            name,
            "warn",
            f"{described}: not even errors reach the debug log; a failure leaves no trace",
            "set 3 (ERROR), the default",
            value,
            level=level,
        )
    default = " (the default)" if level == DEFAULT_LEVEL else ""
    return _check(name, "ok", described + default, None, value, level=level)


def parse_module_levels(value: str) -> dict[str, int] | None:
    """`GE=0:RUNTIME=1` as {"GE": 0, "RUNTIME": 1}; None when malformed (CANN ignores it all)."""
    levels: dict[str, int] = {}
    for part in value.strip().split(":"):
        module, sep, text = part.partition("=")
        level = _level(text)
        if not sep or not module.strip() or level is None:
            return None
        levels[module.strip().upper()] = level
    return levels


def module_level_check(environ: Mapping[str, str]) -> Check:
    name = "ASCEND_MODULE_LOG_LEVEL"
    value = environ.get(name)
    if not value or not value.strip():
        return _check(name, "ok", "unset: every module follows the global level", None, value)
    levels = parse_module_levels(value)
    if levels is None:
        return _check(
            name,
            "warn",
            f"{value!r} is malformed: CANN ignores the whole value",
            "write it as MODULE=LEVEL pairs joined by ':' (GE=1:RUNTIME=3), levels 0–4",
            value,
        )
    listing = ", ".join(f"{module}={level} ({LEVELS[level]})" for module, level in levels.items())
    debug = [module for module, level in levels.items() if level == 0]
    if debug:
        return _check(
            name,
            "warn",
            f"{', '.join(debug)} at DEBUG: {listing}",
            f"remove {', '.join(m + '=0' for m in debug)} outside an investigation",
            value,
            levels=levels,
        )
    return _check(name, "ok", listing, None, value, levels=levels)


def process_log_path_check(environ: Mapping[str, str]) -> Check:
    name = "ASCEND_PROCESS_LOG_PATH"
    value = environ.get(name)
    if not value:
        fallback = "$ASCEND_WORK_PATH/log" if environ.get("ASCEND_WORK_PATH") else "~/ascend/log"
        return _check(name, "ok", f"unset: CANN writes to {fallback}", None, value)
    return _check(name, "ok", f"{value} (host logs go there)", None, value)


def host_file_num_check(environ: Mapping[str, str]) -> Check:
    name = "ASCEND_HOST_LOG_FILE_NUM"
    value = environ.get(name)
    low, high = FILE_NUM_RANGE
    if not value or not value.strip():
        bound = (
            f"at most {human_bytes(DEFAULT_FILE_NUM * FILE_SIZE_MIB << 20)} per process and folder"
        )
        return _check(name, "ok", f"unset: {DEFAULT_FILE_NUM} files ({bound})", None, value)
    text = value.strip()
    count = int(text) if text.isdigit() else None
    if count is None or not low <= count <= high:
        return _check(
            name,
            "warn",
            f"{value!r} is not a number from {low} to {high}: CANN keeps its default of "
            f"{DEFAULT_FILE_NUM} files",
            f"set a number from {low} to {high}, or unset it",
            value,
        )
    bound = f"at most {human_bytes(count * FILE_SIZE_MIB << 20)} per process and folder"
    return _check(name, "ok", f"{count} files ({bound})", None, value, files=count)


def print_to_stdout_check(environ: Mapping[str, str]) -> Check:
    name = "ASCEND_LOG_PRINT_TO_STDOUT"
    old = "ASCEND_SLOG_PRINT_TO_STDOUT"
    value = environ.get(name) or environ.get(old)
    used = name if environ.get(name) else old
    renamed = (
        f"; {old} is the old name (deprecated in CANN 9.2.0, gone in 13.0.0)"
        if environ.get(old)
        else ""
    )
    if value and value.strip() == "1":
        return _check(
            name,
            "warn",
            f"{used}=1: logs go to standard output, not to plog files{renamed}",
            f"unset {used}: with it npuwatch and the log folder see nothing",
            value,
        )
    detail = f"{used}={value}: logs go to files" if value else "unset: logs go to files"
    return _check(name, "ok", detail + renamed, None, value)


def event_enable_check(environ: Mapping[str, str]) -> Check:
    name = "ASCEND_GLOBAL_EVENT_ENABLE"
    value = environ.get(name)
    if not value or value.strip() == "1":
        detail = "1: EVENT records on" if value else "unset: EVENT records on (the default)"
        return _check(name, "ok", detail, None, value)
    if value.strip() == "0":
        return _check(
            name,
            "warn",
            "0: EVENT records off; the run log loses the events that mark a job's milestones",
            "unset ASCEND_GLOBAL_EVENT_ENABLE (EVENT records cost little)",
            value,
        )
    return _check(name, "warn", f"{value!r} is neither 0 nor 1", "set 1, or unset it", value)
