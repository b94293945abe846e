"""What doctor asks npu-smi beyond its table, answered by the fake with the doc's real `-t board`
and `-t health` outputs (formats doc npu_smi.md §7.2, §7.3).

The doc has no unhealthy `-t health` output (its §8 says so), so the alarm case is the real OK
sample with its status and code changed to what a chip in `Warning` prints.
"""

from __future__ import annotations

from pathlib import Path

from npuwatch.doctor.chip_details import ChipDetails, HealthAlarm, read_chip_details
from npuwatch.doctor.devices import NpuSmiOutcome, chip_checks, probe_npu_smi
from npuwatch.doctor.diagnosis import diagnose
from npuwatch.doctor.host import DoctorOptions
from tests.doctor.fake_host import (
    FAKE_NPU_SMI_COMMAND,
    fake_host,
    make_device_nodes,
    npu_smi_environ,
    npu_smi_replies,
)
from tests.npu_smi_samples import load_detail_samples

BOARD_910B = "7.2#3"
"""`-t board -i 0` of a 910B on 25.5.1: Firmware Version 7.8.0.6.201."""
HEALTH = "7.3"


def warning_with_code(code: str) -> str:
    return (
        load_detail_samples()[HEALTH]
        .replace("Health Status                  : OK", "Health Status                  : Warning")
        .replace("Error Code                     : NA", f"Error Code                     : {code}")
    )


def calls_of(path: Path) -> list[str]:
    return path.read_text("utf-8").splitlines() if path.exists() else []


def test_every_npus_firmware_is_read_and_healthy_chips_are_not_asked_for_alarms(
    tmp_path: Path,
) -> None:
    board = load_detail_samples()[BOARD_910B]
    calls = tmp_path / "calls.txt"
    environ = npu_smi_environ(
        tmp_path,
        "1.1",
        NPUWATCH_FAKE_NPU_SMI_CALLS=str(calls),
        **npu_smi_replies(tmp_path, {f"-t board -i {n}": board for n in (0, 1, 7)}),
    )
    host = fake_host(tmp_path, environ)
    report = probe_npu_smi(host, FAKE_NPU_SMI_COMMAND, 10).report
    details = read_chip_details(host, FAKE_NPU_SMI_COMMAND, 10, report)
    assert dict(details.firmware) == {0: "7.8.0.6.201", 1: "7.8.0.6.201", 7: "7.8.0.6.201"}
    assert dict(details.alarms) == {}
    assert calls_of(calls) == [
        "info",
        "info -t board -i 0",
        "info -t board -i 1",
        "info -t board -i 7",
    ]


def chip_3_in_warning(tmp_path: Path, code: str) -> tuple[NpuSmiOutcome, ChipDetails]:
    """Sample 3.2 (NPU 3 in Warning), `-t health` of NPU 3 answering with `code`."""
    replies = npu_smi_replies(tmp_path, {"-t health -i 3 -c 0": warning_with_code(code)})
    host = fake_host(tmp_path, npu_smi_environ(tmp_path, "3.2", **replies))
    outcome = probe_npu_smi(host, FAKE_NPU_SMI_COMMAND, 10)
    return outcome, read_chip_details(host, FAKE_NPU_SMI_COMMAND, 10, outcome.report)


def test_a_chip_not_ok_gets_its_alarm_code_in_the_check(tmp_path: Path) -> None:
    outcome, details = chip_3_in_warning(tmp_path, "80E01801")
    assert dict(details.alarms) == {(3, 0): HealthAlarm("Warning", "80E01801", None)}
    assert details.firmware == {}  # no board replies were recorded: left out, not an error
    by_key = {check.key: check for check in chip_checks(outcome, details.alarms)}
    warning = by_key["device.chip.3.0"]
    assert warning.status == "warn"
    assert warning.detail.endswith(", error code 80E01801")
    assert warning.action is not None and warning.action.startswith("look 80E01801 up in")
    assert warning.facts["health_error_code"] == "80E01801"
    assert by_key["device.chip.0.0"].facts["health_error_code"] is None


def test_a_health_reply_without_a_code_keeps_the_advice_to_ask_npu_smi(tmp_path: Path) -> None:
    outcome, details = chip_3_in_warning(tmp_path, "NA")
    assert dict(details.alarms) == {(3, 0): HealthAlarm("Warning", None, None)}
    warning = {c.key: c for c in chip_checks(outcome, details.alarms)}["device.chip.3.0"]
    assert "error code" not in warning.detail
    assert warning.action is not None and warning.action.startswith(
        "npu-smi info -t health -i 3 -c 0"
    )


def test_a_command_that_does_not_end_with_info_is_not_asked_for_more(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    host = fake_host(
        tmp_path, npu_smi_environ(tmp_path, "3.2", NPUWATCH_FAKE_NPU_SMI_CALLS=str(calls))
    )
    report = probe_npu_smi(host, FAKE_NPU_SMI_COMMAND, 10).report
    wrapper = (*FAKE_NPU_SMI_COMMAND, "--table-only")
    details = read_chip_details(host, wrapper, 10, report)
    assert (details.firmware, details.alarms) == ({}, {})
    assert calls_of(calls) == ["info"]


def test_a_container_without_firmware_files_reports_what_the_npus_run(tmp_path: Path) -> None:
    board = load_detail_samples()[BOARD_910B]
    replies = {"-t board -i 0": board, "-t board -i 3": board.replace("7.8.0.6.201", "7.1.0.6.100")}
    replies["-t health -i 3 -c 0"] = warning_with_code("80E01801")
    host = fake_host(
        tmp_path, npu_smi_environ(tmp_path, "3.2", **npu_smi_replies(tmp_path, replies))
    )
    make_device_nodes(host.root, 8)
    diagnosis = diagnose(host, DoctorOptions(npu_smi=FAKE_NPU_SMI_COMMAND, sample_seconds=0))
    by_key = {check.key: check for check in diagnosis.checks}
    firmware = by_key["cann.firmware"]
    assert firmware.status == "warn"
    assert (
        firmware.detail
        == "the NPUs run different firmware: 7.8.0.6.201 on NPU 0; 7.1.0.6.100 on NPU 3"
    )
    assert by_key["device.chip.3.0"].facts["health_error_code"] == "80E01801"
