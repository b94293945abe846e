"""The diagnosis as text for a person (grouped, aligned, coloured on a TTY) or JSON for scripts.

The JSON document is stable: `schema_version`, `host`, `status` (ok, warn or fail), `counts`
per status, and `checks`, each with `key`, `group`, `title`, `status`, `detail`, `action`
(null unless warn or fail) and `facts` (what was read, in base units).
"""

from __future__ import annotations

from npuwatch.doctor.report import GROUP_TITLES, STATUSES, Check, Diagnosis, Status
from npuwatch.terminal import Palette

SCHEMA_VERSION = 1
_TITLE_WIDTH_CAP = 26


def as_document(diagnosis: Diagnosis) -> dict[str, object]:
    return {
        "schema_version": SCHEMA_VERSION,
        "host": {"name": diagnosis.host_name, "container": diagnosis.container},
        "status": diagnosis.status,
        "counts": diagnosis.counts(),
        "checks": [
            {
                "key": check.key,
                "group": check.group,
                "title": check.title,
                "status": check.status,
                "detail": check.detail,
                "action": check.action,
                "facts": dict(check.facts),
            }
            for check in diagnosis.checks
        ],
    }


def as_json(diagnosis: Diagnosis) -> str:
    import json  # noqa: PLC0415 - only --json needs it

    return json.dumps(as_document(diagnosis), indent=2, ensure_ascii=False) + "\n"


def as_text(diagnosis: Diagnosis, palette: Palette) -> str:
    where = f", in a container ({diagnosis.container})" if diagnosis.container else ""
    lines = [palette.bold(f"npuwatch doctor: {diagnosis.host_name}{where}")]
    width = min(max(len(check.title) for check in diagnosis.checks), _TITLE_WIDTH_CAP)
    for group, title in GROUP_TITLES.items():
        checks = [check for check in diagnosis.checks if check.group == group]
        if not checks:
            continue
        lines += ["", palette.bold(title)]
        lines += [line for check in checks for line in _check_lines(check, width, palette)]
    lines += ["", _summary(diagnosis)]
    return "\n".join(lines) + "\n"


def _check_lines(check: Check, width: int, palette: Palette) -> list[str]:
    label = _status_label(check.status, palette)
    lines = [f"  {label} {check.title.ljust(width)}  {check.detail}"]
    if check.action:
        lines.append(f"  {' ' * 6} {' ' * width}  → {check.action}")
    return lines


def _status_label(status: Status, palette: Palette) -> str:
    padded = status.ljust(6)
    if status == "fail":
        return palette.level("ERROR", padded)
    if status == "warn":
        return palette.level("WARNING", padded)
    if status == "absent":
        return palette.dim(padded)
    return padded


def _summary(diagnosis: Diagnosis) -> str:
    counts = diagnosis.counts()
    listing = ", ".join(f"{counts[status]} {status}" for status in STATUSES)
    findings = counts["warn"] + counts["fail"]
    if not findings:
        return f"{listing}: nothing wrong found"
    return f"{listing}: {findings} to look at, from the top (an early one often explains the rest)"
