"""Whole diagnoses of fake hosts: a healthy NPU server, a container without its devices, a
workstation with nothing of Ascend on it."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from npuwatch import __version__
from npuwatch.doctor.diagnosis import diagnose
from npuwatch.doctor.host import DoctorOptions
from npuwatch.doctor.report import Check
from npuwatch.speedups import Speedups
from tests.doctor.fake_host import (
    FAKE_NPU_SMI_COMMAND,
    fake_host,
    install_driver,
    install_firmware,
    install_toolkit,
    make_device_nodes,
    npu_smi_environ,
    write,
)

QUICK = DoctorOptions(npu_smi=FAKE_NPU_SMI_COMMAND, sample_seconds=0)
TORCH = {"torch": "2.1.0", "torch_npu": "2.1.0.post3"}


def statuses(checks: tuple[Check, ...]) -> dict[str, str]:
    return {check.key: check.status for check in checks}


def test_a_healthy_npu_server_has_nothing_wrong(tmp_path: Path) -> None:
    host = fake_host(tmp_path, npu_smi_environ(tmp_path, "1.1"), packages=TORCH)
    install_toolkit(host.root, "7.0.0")
    install_driver(host.root, "23.0.rc2")
    install_firmware(host.root)
    make_device_nodes(host.root, 8)
    write(tmp_path / "home/ascend/log/debug/plog/plog-1_2025.log", "x")
    diagnosis = diagnose(host, QUICK)
    assert not diagnosis.has_findings
    assert diagnosis.status == "ok"
    found = statuses(diagnosis.checks)
    assert {key: found[key] for key in list(found)[:12]} == {
        "cann.toolkit": "ok",
        "cann.driver": "ok",
        "cann.firmware": "ok",
        "framework.torch": "ok",
        "framework.torch_npu": "ok",
        "npuwatch.speedups": "ok",
        "device.container": "ok",
        "device.nodes": "ok",
        "device.npu_smi": "ok",
        "device.chip.0.0": "ok",
        "device.chip.1.0": "ok",
        "device.chip.7.0": "ok",
    }
    assert diagnosis.check("log.folder").status == "ok"
    assert diagnosis.check("cann.driver").detail.endswith("npu-smi agrees")


def test_checks_come_in_the_diagnostic_order(tmp_path: Path) -> None:
    diagnosis = diagnose(fake_host(tmp_path), QUICK)
    groups = [check.group for check in diagnosis.checks]
    assert groups == sorted(groups, key=["environment", "devices", "logs"].index)
    assert groups[0] == "environment" and groups[-1] == "logs"


def test_a_container_started_without_its_npus_and_with_debug_on(tmp_path: Path) -> None:
    host = fake_host(
        tmp_path,
        {"ASCEND_GLOBAL_LOG_LEVEL": "0", "ASCEND_MODULE_LOG_LEVEL": "GE=0"},
        packages=TORCH,
    )
    (host.root / ".dockerenv").touch()
    install_toolkit(host.root, "8.0.RC1", "8.0.0.1")
    diagnosis = diagnose(host, DoctorOptions(sample_seconds=0))
    assert diagnosis.status == "fail"
    assert diagnosis.container == "/.dockerenv"
    found = statuses(diagnosis.checks)
    assert found["device.nodes"] == "fail"
    assert found["device.npu_smi"] == "absent"
    assert found["log.global_log_level"] == "warn"
    assert found["log.module_log_level"] == "warn"
    nodes = diagnosis.check("device.nodes")
    assert "though the CANN toolkit and torch_npu are here" in nodes.detail
    assert diagnosis.counts() == {"ok": 9, "warn": 2, "fail": 1, "absent": 5}


def test_a_workstation_without_ascend_has_only_absences(tmp_path: Path) -> None:
    diagnosis = diagnose(fake_host(tmp_path), DoctorOptions(sample_seconds=0))
    assert not diagnosis.has_findings
    found = statuses(diagnosis.checks)
    absent = sorted(key for key, status in found.items() if status == "absent")
    assert absent == [
        "agent.config",
        "cann.driver",
        "cann.firmware",
        "cann.toolkit",
        "device.nodes",
        "device.npu_smi",
        "framework.torch",
        "framework.torch_npu",
        "log.folder",
    ]


def test_a_driver_whose_npu_smi_fails_is_a_failing_host(tmp_path: Path) -> None:
    env = npu_smi_environ(tmp_path, "1.1", NPUWATCH_FAKE_NPU_SMI_EXIT="1")
    host = fake_host(tmp_path, env)
    install_driver(host.root)
    make_device_nodes(host.root, 8)
    diagnosis = diagnose(host, QUICK)
    assert diagnosis.check("device.npu_smi").status == "fail"
    assert diagnosis.check("cann.driver").detail.endswith("version.info)")
    assert not any(check.key.startswith("device.chip.") for check in diagnosis.checks)


def test_the_agents_configuration_file_is_found_or_named(tmp_path: Path) -> None:
    host = fake_host(tmp_path)
    write(host.root / "etc/npuwatch/npuwatch.toml", "[agent]\n")
    check = diagnose(host, QUICK).check("agent.config")
    assert check.status == "ok"
    assert "npuwatch config check" in check.detail
    missing = fake_host(tmp_path, {"NPUWATCH_CONFIG": str(tmp_path / "nope.toml")})
    assert diagnose(missing, QUICK).check("agent.config").status == "warn"


def test_doctor_names_the_configuration_as_the_agent_does() -> None:
    from npuwatch import config
    from npuwatch.doctor import agent_config

    assert agent_config.CONFIG_PATH_VARIABLE == config.CONFIG_PATH_VARIABLE
    assert Path(agent_config.DEFAULT_CONFIG_PATH) == config.DEFAULT_CONFIG_PATH


def test_folders_doctor_may_not_look_into_are_reported_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locked = tmp_path / "locked"
    (locked / "log").mkdir(parents=True)
    (locked / "toolkit").mkdir()
    real_stat = Path.stat

    # The tests may run as root, who may look anywhere: refuse as the kernel would a user.
    def stat(path: Path, **kwargs: bool) -> os.stat_result:
        if path.is_relative_to(locked):
            raise PermissionError(13, "Permission denied", str(path))
        return real_stat(path, **kwargs)

    monkeypatch.setattr(Path, "stat", stat)
    host = fake_host(
        tmp_path,
        {
            "ASCEND_PROCESS_LOG_PATH": str(locked / "log"),
            "ASCEND_TOOLKIT_HOME": str(locked / "toolkit"),
            "NPUWATCH_CONFIG": str(locked / "npuwatch.toml"),
        },
    )
    diagnosis = diagnose(host, QUICK)
    folder = diagnosis.check("log.folder")
    assert (folder.status, folder.detail) == (
        "warn",
        f"cannot look at {locked}/log: Permission denied",
    )
    assert diagnosis.check("cann.toolkit").status == "warn"
    assert diagnosis.check("agent.config").status == "warn"


def test_an_npuwatch_without_its_c_speedups_is_a_warning_with_what_to_do(tmp_path: Path) -> None:
    missing = {"first pass": "not built: no compiled module in the installed package"}
    host = replace(fake_host(tmp_path), speedups=lambda: Speedups(("block columns",), missing))
    check = diagnose(host, QUICK).check("npuwatch.speedups")
    assert check.status == "warn"
    assert check.detail == (
        f"{__version__}, C speedups off: first pass in pure Python, the same records at about "
        "2.4x the CPU a line"
    )
    assert check.action is not None and "python3-dev" in check.action
    assert check.facts["speedups"] == "partial"
    assert check.facts["missing"] == missing
