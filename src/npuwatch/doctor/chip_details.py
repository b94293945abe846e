"""What doctor asks npu-smi beyond its table: the firmware each NPU runs, a sick chip's alarm.

The table of `npu-smi info` says a chip's health in one word. The error code behind a word
that is not OK comes from `npu-smi info -t health -i N -c C`, and the firmware an NPU runs from
`npu-smi info -t board -i N` (formats doc npu_smi.md §7.2, §7.3) — the only place a container
has it, since containers seldom mount /usr/local/Ascend/firmware. Doctor asks so the operator
does not have to, and only when the table answered and the configured command ends with `info`:
a wrapper that prints the table cannot be asked for more. A query that fails leaves its detail
out; it never turns a check into an error of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from npuwatch.collector.npu_smi_command import NpuSmiFailed, NpuSmiUnavailable, run_npu_smi
from npuwatch.doctor.host import Host

if TYPE_CHECKING:
    from npuwatch.parsers.npu_smi import NpuSmiReport
    from npuwatch.parsers.npu_smi_details import KeyValueReport

FIRMWARE_VERSION = "Firmware Version"
HEALTH_STATUS = "Health Status"
ERROR_CODE = "Error Code"
ERROR_INFORMATION = "Error Information"


@dataclass(frozen=True)
class HealthAlarm:
    """`npu-smi info -t health` of one chip; None where it printed `NA`."""

    status: str | None
    error_code: str | None
    information: str | None


NO_ALARM = HealthAlarm(None, None, None)
"""What a chip that was not asked (or did not answer) has to say."""


@dataclass(frozen=True)
class ChipDetails:
    """The answers of the detail queries (empty when none was asked or none answered)."""

    firmware: Mapping[int, str] = field(default_factory=lambda: MappingProxyType({}))
    """The firmware version each NPU runs, by NPU id."""
    alarms: Mapping[tuple[int, int], HealthAlarm] = field(
        default_factory=lambda: MappingProxyType({})
    )
    """The health alarm of each chip whose table health was not OK, by (NPU id, chip id)."""


def read_chip_details(
    host: Host, command: Sequence[str], timeout_s: float, report: NpuSmiReport | None
) -> ChipDetails:
    """Ask `command -t board` of every NPU and `command -t health` of every chip not OK."""
    if report is None or not report.chips or list(command[-1:]) != ["info"]:
        return ChipDetails()
    # Imported here, as in devices.py: the parsers' package is only for hosts with an answer.
    from npuwatch.parsers.npu_smi_details import parse_key_value_output  # noqa: PLC0415

    def query(*arguments: str) -> KeyValueReport | None:
        words = (*command, *arguments)
        try:
            text = run_npu_smi(words, timeout_s=timeout_s, env=dict(host.environ))
        except (NpuSmiUnavailable, NpuSmiFailed):
            return None
        return parse_key_value_output(text)

    firmware: dict[int, str] = {}
    for npu_id in sorted({chip.npu_id for chip in report.chips}):
        board = query("-t", "board", "-i", str(npu_id))
        block = board.block_with(FIRMWARE_VERSION) if board else None
        version = block.value_text(FIRMWARE_VERSION) if block else None
        if version is not None:
            firmware[npu_id] = version
    alarms: dict[tuple[int, int], HealthAlarm] = {}
    for chip in report.chips:
        if chip.healthy:
            continue
        health = query("-t", "health", "-i", str(chip.npu_id), "-c", str(chip.chip_id))
        block = health.block_with(HEALTH_STATUS) if health else None
        if block is not None:
            alarms[chip.npu_id, chip.chip_id] = HealthAlarm(
                block.value_text(HEALTH_STATUS),
                block.value_text(ERROR_CODE),
                block.value_text(ERROR_INFORMATION),
            )
    return ChipDetails(MappingProxyType(firmware), MappingProxyType(alarms))
