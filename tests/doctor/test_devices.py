"""Devices: /dev/davinci* nodes, npu-smi (the fake replays real tables), and chip health."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from npuwatch.doctor.devices import (
    DeviceNodes,
    NpuEvidence,
    chip_checks,
    device_node_check,
    find_device_nodes,
    npu_smi_check,
    probe_npu_smi,
)
from npuwatch.doctor.host import Host
from tests.doctor.fake_host import (
    FAKE_NPU_SMI_COMMAND,
    fake_host,
    make_device_nodes,
    npu_smi_environ,
    write,
)
from tests.npu_smi_samples import load_doc_samples, table_only

NOTHING = NpuEvidence(driver=False, npu_smi=False, toolkit=False, torch_npu=False)
TOOLKIT_ONLY = NpuEvidence(driver=False, npu_smi=False, toolkit=True, torch_npu=False)
DRIVER = NpuEvidence(driver=True, npu_smi=True, toolkit=False, torch_npu=False)


def nodes_of(tmp_path: Path, count: int, *, management: bool = True) -> DeviceNodes:
    host = fake_host(tmp_path)
    make_device_nodes(host.root, count, management=management)
    return find_device_nodes(host)


def test_all_nodes_present_is_ok_and_names_the_range(tmp_path: Path) -> None:
    nodes = nodes_of(tmp_path, 8)
    assert nodes.davinci == tuple(range(8))
    check = device_node_check(nodes, None, DRIVER)
    assert check.status == "ok"
    assert check.detail == ("/dev/davinci0–7 (8 chips) and davinci_manager, devmm_svm, hisi_hdc")


def test_numbers_sort_as_numbers_and_gaps_are_listed(tmp_path: Path) -> None:
    host = fake_host(tmp_path)
    make_device_nodes(host.root, 0)
    for number in (10, 2, 1):
        (host.root / f"dev/davinci{number}").touch()
    nodes = find_device_nodes(host)
    assert nodes.davinci == (1, 2, 10)
    assert device_node_check(nodes, None, DRIVER).detail.startswith(
        "/dev/davinci1, davinci2, davinci10 (3 chips)"
    )


def test_a_container_with_the_toolkit_but_no_davinci_nodes_fails_with_the_docker_flags(
    tmp_path: Path,
) -> None:
    check = device_node_check(nodes_of(tmp_path, 0, management=False), "/.dockerenv", TOOLKIT_ONLY)
    assert check.status == "fail"
    assert check.detail == (
        "no /dev/davinci* in this container, though the CANN toolkit is here: "
        "it was started without its NPUs"
    )
    assert check.action is not None
    assert "--device=/dev/davinci0" in check.action
    assert "--device=/dev/davinci_manager" in check.action


def test_a_container_given_only_the_management_nodes_fails(tmp_path: Path) -> None:
    check = device_node_check(nodes_of(tmp_path, 0), "/.dockerenv", NOTHING)
    assert check.status == "fail"
    assert "though /dev/davinci_manager is here" in check.detail


def test_a_container_with_davinci_but_not_the_management_nodes_fails(tmp_path: Path) -> None:
    check = device_node_check(nodes_of(tmp_path, 2, management=False), "/.dockerenv", DRIVER)
    assert check.status == "fail"
    assert check.detail.endswith(
        "but /dev/davinci_manager, /dev/devmm_svm and /dev/hisi_hdc are missing"
    )
    assert check.action == (
        "recreate the container with --device=/dev/davinci_manager --device=/dev/devmm_svm "
        "--device=/dev/hisi_hdc"
    )


@pytest.mark.parametrize(
    "evidence",
    [DRIVER, NpuEvidence(driver=False, npu_smi=True, toolkit=False, torch_npu=False)],
    ids=["version.info", "npu-smi"],
)
def test_a_host_with_the_driver_installed_but_no_nodes_has_it_not_loaded(
    tmp_path: Path, evidence: NpuEvidence
) -> None:
    check = device_node_check(nodes_of(tmp_path, 0, management=False), None, evidence)
    assert check.status == "fail"
    assert "the driver is not loaded" in check.detail


@pytest.mark.parametrize(
    ("container", "detail"),
    [
        (None, "no /dev/davinci* — no NPU on this host"),
        (
            "/.dockerenv",
            "no /dev/davinci* — no NPU in this container (none was passed with --device)",
        ),
    ],
)
def test_no_nodes_and_nothing_else_of_ascend_is_absent(
    tmp_path: Path, container: str | None, detail: str
) -> None:
    check = device_node_check(nodes_of(tmp_path, 0, management=False), container, NOTHING)
    assert (check.status, check.detail) == ("absent", detail)


def test_nodes_this_user_cannot_open_warn_about_the_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = fake_host(tmp_path)
    make_device_nodes(host.root, 2)
    # The tests may run as root, who opens anything: answer as the kernel would for a user.
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode: Path(p).name != "davinci1" and real_access(p, mode)
    )
    check = device_node_check(find_device_nodes(host), None, DRIVER)
    assert check.status == "warn"
    assert check.detail.endswith("this user cannot read and write /dev/davinci1")
    assert check.action is not None and "HwHiAiUser" in check.action


def npu_smi_host(tmp_path: Path, sample: str, **overrides: str) -> Host:
    return fake_host(tmp_path, npu_smi_environ(tmp_path, sample, **overrides))


def test_a_healthy_910b_table_gives_one_ok_check_per_chip(tmp_path: Path) -> None:
    outcome = probe_npu_smi(npu_smi_host(tmp_path, "1.1"), FAKE_NPU_SMI_COMMAND, 10)
    check = npu_smi_check(outcome, None, DRIVER)
    assert (check.status, check.detail) == ("ok", "npu-smi 23.0.rc2: 3 chips, all OK")
    chips = chip_checks(outcome)
    assert [(c.key, c.title, c.status) for c in chips] == [
        ("device.chip.0.0", "NPU 0 chip 0", "ok"),
        ("device.chip.1.0", "NPU 1 chip 0", "ok"),
        ("device.chip.7.0", "NPU 7 chip 0", "ok"),
    ]
    assert chips[0].detail == "910B1 OK, 46 °C, 88.4 W, HBM 4.1 GiB / 64 GiB"
    assert chips[0].facts["hbm_total_bytes"] == 65536 << 20


def test_a_chip_in_warning_warns_and_says_how_to_read_its_alarms(tmp_path: Path) -> None:
    outcome = probe_npu_smi(npu_smi_host(tmp_path, "3.2"), FAKE_NPU_SMI_COMMAND, 10)
    assert npu_smi_check(outcome, None, DRIVER).detail == "npu-smi 24.1.RC2: 2 chips, 1 not OK"
    by_key = {c.key: c for c in chip_checks(outcome)}
    assert by_key["device.chip.0.0"].status == "ok"
    warning = by_key["device.chip.3.0"]
    assert warning.status == "warn"
    assert warning.detail.startswith("xxx Warning, 39 °C, 206.9 W, HBM 0 B / 32 GiB")
    assert warning.action is not None
    assert warning.action.startswith("npu-smi info -t health -i 3 -c 0")


def test_a_health_worse_than_warning_fails(tmp_path: Path) -> None:
    alarm = table_only(load_doc_samples()["3.2"]).replace("| Warning ", "| Alarm   ")
    output = write(tmp_path / "alarm.txt", alarm)
    host = fake_host(
        tmp_path, npu_smi_environ(tmp_path, "3.2", NPUWATCH_FAKE_NPU_SMI_OUTPUT=str(output))
    )
    chips = chip_checks(probe_npu_smi(host, FAKE_NPU_SMI_COMMAND, 10))
    assert [c.status for c in chips] == ["ok", "fail"]


def test_inference_cards_without_hbm_show_their_memory(tmp_path: Path) -> None:
    chips = chip_checks(probe_npu_smi(npu_smi_host(tmp_path, "4.1"), FAKE_NPU_SMI_COMMAND, 10))
    assert [c.key for c in chips] == ["device.chip.2.0", "device.chip.2.1"]
    assert "memory " in chips[0].detail and "HBM" not in chips[0].detail


def test_a_failing_driver_fails_with_npu_smis_own_message(tmp_path: Path) -> None:
    host = npu_smi_host(tmp_path, "1.1", NPUWATCH_FAKE_NPU_SMI_EXIT="1")
    outcome = probe_npu_smi(host, FAKE_NPU_SMI_COMMAND, 10)
    check = npu_smi_check(outcome, None, DRIVER)
    assert check.status == "fail"
    assert "exited with status 1: dcmi module initialize failed. ret is -8005" in check.detail
    assert check.action is not None and "dmesg" in check.action
    assert chip_checks(outcome) == []


def test_rows_the_parser_cannot_read_warn(tmp_path: Path) -> None:
    outcome = probe_npu_smi(npu_smi_host(tmp_path, "2.1"), FAKE_NPU_SMI_COMMAND, 10)
    check = npu_smi_check(outcome, None, DRIVER)
    assert check.status == "warn"
    assert "1 table rows could not be read (line " in check.detail


def test_an_answer_without_chips_warns(tmp_path: Path) -> None:
    output = write(tmp_path / "empty.txt", "| npu-smi 23.0.rc2     Version: 23.0.rc2   |\n")
    env = npu_smi_environ(tmp_path, "1.1", NPUWATCH_FAKE_NPU_SMI_OUTPUT=str(output))
    outcome = probe_npu_smi(fake_host(tmp_path, env), FAKE_NPU_SMI_COMMAND, 10)
    check = npu_smi_check(outcome, None, DRIVER)
    assert (check.status, check.detail) == (
        "warn",
        "npu-smi 23.0.rc2 answered without any chip row",
    )


def test_no_npu_smi_on_a_host_without_a_driver_is_absent(tmp_path: Path) -> None:
    outcome = probe_npu_smi(fake_host(tmp_path), ("npu-smi", "info"), 10)
    assert not outcome.found
    check = npu_smi_check(outcome, None, NOTHING)
    assert (check.status, check.detail) == (
        "absent",
        "not found — no Ascend driver on this host (npu-smi is not on PATH)",
    )


@pytest.mark.parametrize(
    ("container", "advice"),
    [
        (None, "add /usr/local/sbin to PATH"),
        ("/.dockerenv", "-v /usr/local/sbin/npu-smi:/usr/local/sbin/npu-smi"),
    ],
)
def test_no_npu_smi_with_the_driver_installed_warns(
    tmp_path: Path, container: str | None, advice: str
) -> None:
    outcome = probe_npu_smi(fake_host(tmp_path), ("npu-smi", "info"), 10)
    evidence = NpuEvidence(driver=True, npu_smi=False, toolkit=False, torch_npu=False)
    check = npu_smi_check(outcome, container, evidence)
    assert check.status == "warn"
    assert check.detail == "not found (npu-smi), though the driver is installed"
    assert check.action is not None and advice in check.action
