"""The Devices checks: container, /dev/davinci* nodes, npu-smi, and the health of every chip.

npu-smi's table is parsed only when npu-smi answered: the parser's package imports the log
parsers (and pydantic), which a host without an NPU never needs.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from npuwatch.collector.npu_smi_command import NpuSmiFailed, NpuSmiUnavailable, run_npu_smi
from npuwatch.doctor.chip_details import NO_ALARM, HealthAlarm
from npuwatch.doctor.host import Host
from npuwatch.doctor.report import Check, Status
from npuwatch.doctor.wording import are, celsius, count_of, human_bytes, joined, watts

if TYPE_CHECKING:
    from npuwatch.parsers.npu_smi import NpuChip, NpuSmiReport

MANAGEMENT_NODES = ("davinci_manager", "devmm_svm", "hisi_hdc")
"""The nodes every NPU process opens besides its /dev/davinciN."""

_DAVINCI = re.compile(r"davinci(\d+)")
_DOCKER_DEVICES = (
    "--device=/dev/davinci0 (one per NPU) --device=/dev/davinci_manager --device=/dev/devmm_svm "
    "--device=/dev/hisi_hdc -v /usr/local/Ascend/driver:/usr/local/Ascend/driver:ro "
    "-v /usr/local/sbin/npu-smi:/usr/local/sbin/npu-smi"
)


@dataclass(frozen=True)
class DeviceNodes:
    """The Ascend device nodes under /dev."""

    davinci: tuple[int, ...]
    management: tuple[str, ...]
    inaccessible: tuple[str, ...]
    """Nodes this user may not both read and write (not in the HwHiAiUser group?)."""

    @property
    def missing_management(self) -> tuple[str, ...]:
        return tuple(name for name in MANAGEMENT_NODES if name not in self.management)


def find_device_nodes(host: Host) -> DeviceNodes:
    dev = host.at("/dev")
    try:
        names = sorted(entry.name for entry in os.scandir(dev))
    except OSError:
        names = []
    davinci = sorted(int(m[1]) for m in map(_DAVINCI.fullmatch, names) if m is not None)
    management = tuple(name for name in MANAGEMENT_NODES if name in names)
    ours = [f"davinci{n}" for n in davinci] + list(management)
    inaccessible = tuple(n for n in ours if not os.access(dev / n, os.R_OK | os.W_OK))
    return DeviceNodes(tuple(davinci), management, inaccessible)


@dataclass(frozen=True)
class NpuEvidence:
    """What, besides the device nodes, says this machine is meant to use NPUs."""

    driver: bool
    npu_smi: bool
    toolkit: bool
    torch_npu: bool

    def reasons(self) -> list[str]:
        named = (
            (self.driver, "the driver"),
            (self.npu_smi, "npu-smi"),
            (self.toolkit, "the CANN toolkit"),
            (self.torch_npu, "torch_npu"),
        )
        return [name for present, name in named if present]


def container_check(container: str | None) -> Check:
    detail = f"yes ({container})" if container else "no (a plain host)"
    return Check(
        "device.container", "devices", "container", "ok", detail, facts={"evidence": container}
    )


def device_node_check(nodes: DeviceNodes, container: str | None, evidence: NpuEvidence) -> Check:
    facts: dict[str, object] = {
        "davinci": list(nodes.davinci),
        "management": list(nodes.management),
        "inaccessible": list(nodes.inaccessible),
    }

    def check(status: Status, detail: str, action: str | None = None) -> Check:
        return Check("device.nodes", "devices", "device nodes", status, detail, action, facts)

    if not nodes.davinci:
        if container and (evidence.reasons() or nodes.management):
            found = evidence.reasons() or ["/dev/" + nodes.management[0]]
            return check(
                "fail",
                f"no /dev/davinci* in this container, though {joined(found)} {are(found)} here: "
                "it was started without its NPUs",
                f"recreate the container with {_DOCKER_DEVICES}",
            )
        if not container and (evidence.driver or evidence.npu_smi):
            # npu-smi comes with the driver package: either says the driver is installed.
            return check(
                "fail",
                "the driver is installed but there is no /dev/davinci*: the driver is not loaded",
                "lsmod | grep drv_ and dmesg | grep -i davinci; reinstall the driver or reboot",
            )
        if container:
            return check(
                "absent",
                "no /dev/davinci* — no NPU in this container (none was passed with --device)",
            )
        return check("absent", "no /dev/davinci* — no NPU on this host")
    present = f"/dev/{_node_range(nodes.davinci)} ({count_of(len(nodes.davinci), 'chip')})"
    if nodes.missing_management:
        missing = [f"/dev/{name}" for name in nodes.missing_management]
        action = (
            "recreate the container with "
            + " ".join(f"--device=/dev/{name}" for name in nodes.missing_management)
            if container
            else "reload the driver (it creates the management nodes) or reboot"
        )
        return check("fail", f"{present}, but {joined(missing)} {are(missing)} missing", action)
    if nodes.inaccessible:
        return check(
            "warn",
            f"{present}; this user cannot read and write "
            + ", ".join(f"/dev/{name}" for name in nodes.inaccessible),
            "run the job as a member of the HwHiAiUser group (usermod -aG HwHiAiUser $USER)",
        )
    return check("ok", f"{present} and {', '.join(MANAGEMENT_NODES)}")


def _node_range(numbers: Sequence[int]) -> str:
    if list(numbers) == list(range(numbers[0], numbers[-1] + 1)) and len(numbers) > 1:
        return f"davinci{numbers[0]}–{numbers[-1]}"
    return ", ".join(f"davinci{n}" for n in numbers)


@dataclass(frozen=True)
class NpuSmiOutcome:
    """One run of npu-smi: its parsed report, or why there is none."""

    command: tuple[str, ...]
    report: NpuSmiReport | None = None
    unavailable: str | None = None
    failed: str | None = None

    @property
    def found(self) -> bool:
        return self.unavailable is None


def probe_npu_smi(host: Host, command: Sequence[str], timeout_s: float) -> NpuSmiOutcome:
    """Run npu-smi once, with doctor's environment (its PATH finds the program)."""
    words = tuple(command)
    try:
        text = run_npu_smi(words, timeout_s=timeout_s, env=dict(host.environ))
    except NpuSmiUnavailable as error:
        return NpuSmiOutcome(words, unavailable=str(error))
    except NpuSmiFailed as error:
        return NpuSmiOutcome(words, failed=str(error))
    from npuwatch.parsers.npu_smi import parse_npu_smi  # noqa: PLC0415 - see the docstring

    return NpuSmiOutcome(words, report=parse_npu_smi(text))


def npu_smi_check(outcome: NpuSmiOutcome, container: str | None, evidence: NpuEvidence) -> Check:
    program = shlex.join(outcome.command)
    facts: dict[str, object] = {"command": list(outcome.command)}

    def check(status: Status, detail: str, action: str | None = None) -> Check:
        return Check("device.npu_smi", "devices", "npu-smi", status, detail, action, facts)

    if outcome.unavailable is not None:
        facts["error"] = outcome.unavailable
        if evidence.driver:
            where = (
                "mount it into the container: -v /usr/local/sbin/npu-smi:/usr/local/sbin/npu-smi"
                if container
                else "add /usr/local/sbin to PATH, or give --npu-smi '/usr/local/sbin/npu-smi info'"
            )
            return check(
                "warn", f"not found ({outcome.command[0]}), though the driver is installed", where
            )
        return check("absent", "not found — no Ascend driver on this host (npu-smi is not on PATH)")
    if outcome.failed is not None:
        facts["error"] = outcome.failed
        return check(
            "fail",
            outcome.failed,
            "look for driver errors in dmesg; a hung device needs a reset or a reboot",
        )
    report = outcome.report
    assert report is not None
    facts.update(
        npu_smi_version=report.npu_smi_version,
        driver_version=report.driver_version,
        chips=len(report.chips),
        unreadable_rows=len(report.problems),
    )
    version = f"npu-smi {report.npu_smi_version}" if report.npu_smi_version else program
    if not report.chips:
        return check(
            "warn",
            f"{version} answered without any chip row",
            f"run {program} and read it: the driver sees no NPU, or the table is new to npuwatch",
        )
    unhealthy = sum(1 for chip in report.chips if not chip.healthy)
    health = "all OK" if not unhealthy else f"{unhealthy} not OK"
    detail = f"{version}: {count_of(len(report.chips), 'chip')}, {health}"
    if report.problems:
        first = report.problems[0]
        return check(
            "warn",
            f"{detail}; {len(report.problems)} table rows could not be read "
            f"(line {first.line_number}: {first.reason})",
            f"run {program} and check those rows; report the table to npuwatch if it is valid",
        )
    return check("ok", detail)


def chip_checks(
    outcome: NpuSmiOutcome, alarms: Mapping[tuple[int, int], HealthAlarm] | None = None
) -> list[Check]:
    """One check per chip that npu-smi listed, its status from the chip's Health.

    `alarms` holds what `npu-smi info -t health` said of the chips that are not OK.
    """
    if outcome.report is None:
        return []
    alarms = alarms or {}
    return [
        _chip_check(chip, alarms.get((chip.npu_id, chip.chip_id))) for chip in outcome.report.chips
    ]


def _chip_check(chip: NpuChip, alarm: HealthAlarm | None) -> Check:
    parts = [f"{chip.name} {chip.health}"]
    if chip.temperature_celsius is not None:
        parts.append(celsius(chip.temperature_celsius))
    if chip.power_watts is not None:
        parts.append(watts(chip.power_watts))
    if chip.hbm_total_bytes:
        parts.append(
            f"HBM {human_bytes(chip.hbm_used_bytes or 0)} / {human_bytes(chip.hbm_total_bytes)}"
        )
    elif chip.memory_total_bytes:
        memory = human_bytes(chip.memory_used_bytes or 0)
        parts.append(f"memory {memory} / {human_bytes(chip.memory_total_bytes)}")
    status: Status = "ok" if chip.healthy else "warn" if chip.health == "Warning" else "fail"
    action = None
    alarm = alarm or NO_ALARM
    code = alarm.error_code
    if code is not None:
        parts.append(
            f"error code {code}" + (f" ({alarm.information})" if alarm.information else "")
        )
        action = (
            f"look {code} up in the health alarm reference of the NPU's hardware guide; "
            "the device log under /var/log/npu/slog says why"
        )
    elif status != "ok":
        action = (
            f"npu-smi info -t health -i {chip.npu_id} -c {chip.chip_id} for the alarm codes; "
            "the device log under /var/log/npu/slog says why"
        )
    return Check(
        f"device.chip.{chip.npu_id}.{chip.chip_id}",
        "devices",
        f"NPU {chip.npu_id} chip {chip.chip_id}",
        status,
        ", ".join(parts),
        action,
        facts={
            "npu_id": chip.npu_id,
            "chip_id": chip.chip_id,
            "name": chip.name,
            "health": chip.health,
            "temperature_celsius": chip.temperature_celsius,
            "power_watts": chip.power_watts,
            "hbm_used_bytes": chip.hbm_used_bytes,
            "hbm_total_bytes": chip.hbm_total_bytes,
            "memory_used_bytes": chip.memory_used_bytes,
            "memory_total_bytes": chip.memory_total_bytes,
            "bus_id": chip.bus_id,
            "health_error_code": code,
            "health_error_information": alarm.information,
        },
    )
