"""What doctor found: one `Check` per thing looked at, and the `Diagnosis` that holds them all."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Status = Literal["ok", "warn", "fail", "absent"]
"""ok: as it should be; warn: works, but will hurt; fail: broken; absent: not on this host."""

STATUSES: tuple[Status, ...] = ("ok", "warn", "fail", "absent")

Group = Literal["environment", "devices", "logs"]

GROUP_TITLES: dict[Group, str] = {
    "environment": "Environment",
    "devices": "Devices",
    "logs": "Logs",
}
"""The groups in the order Ascend users diagnose: environment, then devices, then logs."""


@dataclass(frozen=True)
class Check:
    """One thing doctor looked at: its status, a one-line detail and, when wrong, what to do."""

    key: str
    """A stable name for scripts (`cann.toolkit`, `device.chip.0.0`, `log.folder`)."""
    group: Group
    title: str
    status: Status
    detail: str
    action: str | None = None
    """The first thing to do; every warn and fail has one."""
    facts: Mapping[str, object] = field(default_factory=dict)
    """What was measured or read, in base units, for --json."""

    def __post_init__(self) -> None:
        if self.status in ("warn", "fail") and not self.action:
            raise ValueError(f"check {self.key} is {self.status} but says nothing to do")


@dataclass(frozen=True)
class Diagnosis:
    """Every check of one run, in the order they are reported."""

    host_name: str
    container: str | None
    """Why this looks like a container (`/.dockerenv`), or None on a plain host."""
    checks: tuple[Check, ...]

    @property
    def has_findings(self) -> bool:
        """Whether any check warns or fails (absent things are no finding)."""
        return any(check.status in ("warn", "fail") for check in self.checks)

    @property
    def status(self) -> Status:
        """fail when anything fails, else warn when anything warns, else ok."""
        statuses = {check.status for check in self.checks}
        if "fail" in statuses:
            return "fail"
        return "warn" if "warn" in statuses else "ok"

    def counts(self) -> dict[Status, int]:
        counts: dict[Status, int] = dict.fromkeys(STATUSES, 0)
        for check in self.checks:
            counts[check.status] += 1
        return counts

    def check(self, key: str) -> Check:
        """The check named `key` (KeyError when there is none)."""
        for check in self.checks:
            if check.key == key:
                return check
        raise KeyError(key)
