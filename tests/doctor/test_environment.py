"""The Environment checks: CANN toolkit, driver, firmware, torch and torch_npu."""

from __future__ import annotations

from pathlib import Path

import pytest

from npuwatch.doctor.environment import (
    driver_check,
    firmware_check,
    framework_checks,
    toolkit_check,
)
from npuwatch.doctor.host import DoctorOptions
from npuwatch.doctor.versions import find_toolkits
from tests.doctor.fake_host import (
    fake_host,
    install_driver,
    install_firmware,
    install_toolkit,
    write,
)


def test_the_toolkit_is_reported_with_its_version_and_the_file_it_came_from(
    tmp_path: Path,
) -> None:
    host = fake_host(tmp_path)
    install_toolkit(host.root, "7.0.0", "7.0.0.5.242")
    check = toolkit_check(find_toolkits(host, DoctorOptions()))
    assert check.status == "ok"
    assert check.detail == (
        f"7.0.0 ({host.root}/usr/local/Ascend/ascend-toolkit/latest/version.cfg)"
    )
    assert check.facts["version"] == "7.0.0"


def test_other_installed_toolkits_are_named(tmp_path: Path) -> None:
    host = fake_host(tmp_path)
    install_toolkit(host.root, "7.0.0")
    install_toolkit(host.root, "8.0.RC1", "8.0.0.1", latest=False)
    check = toolkit_check(find_toolkits(host, DoctorOptions()))
    assert check.status == "ok"
    assert check.detail.endswith("; also installed: 8.0.RC1")
    assert len(check.facts["installations"]) == 2  # type: ignore[arg-type]


def test_an_environment_naming_a_removed_toolkit_warns_and_says_to_source_set_env(
    tmp_path: Path,
) -> None:
    host = fake_host(tmp_path, {"ASCEND_HOME_PATH": str(tmp_path / "gone/latest")})
    install_toolkit(host.root, "7.0.0")
    check = toolkit_check(find_toolkits(host, DoctorOptions()))
    assert check.status == "warn"
    assert f"$ASCEND_HOME_PATH names {tmp_path}/gone/latest, which does not exist" in check.detail
    assert "(installed: 7.0.0" in check.detail
    assert check.action is not None and "set_env.sh" in check.action


def test_a_toolkit_folder_without_any_version_file_warns(tmp_path: Path) -> None:
    host = fake_host(tmp_path)
    (host.root / "usr/local/Ascend/ascend-toolkit/latest/bin").mkdir(parents=True)
    check = toolkit_check(find_toolkits(host, DoctorOptions()))
    assert check.status == "warn"
    assert "no version.cfg or *_install.info" in check.detail


def test_no_toolkit_is_absent_and_says_where_doctor_looked(tmp_path: Path) -> None:
    host = fake_host(tmp_path)
    check = toolkit_check(find_toolkits(host, DoctorOptions()))
    assert check.status == "absent"
    assert check.detail.startswith("not found (looked in ")
    assert f"{host.root}/usr/local/Ascend/ascend-toolkit/latest" in check.detail
    assert f"{tmp_path}/home/Ascend/ascend-toolkit/latest" in check.detail


def test_the_driver_agrees_with_npu_smi(tmp_path: Path) -> None:
    host = fake_host(tmp_path)
    install_driver(host.root, "23.0.rc2")
    check = driver_check(host, "23.0.rc2")
    assert check.status == "ok"
    assert check.detail.startswith("23.0.rc2 (")
    assert check.detail.endswith("driver/version.info); npu-smi agrees")


def test_an_installed_driver_that_is_not_the_running_one_warns(tmp_path: Path) -> None:
    host = fake_host(tmp_path)
    install_driver(host.root, "24.1.rc2")
    check = driver_check(host, "23.0.rc3")
    assert check.status == "warn"
    assert "but npu-smi reports 23.0.rc3" in check.detail
    assert check.action is not None and "reboot" in check.action


def test_without_version_info_the_driver_version_comes_from_npu_smi(tmp_path: Path) -> None:
    check = driver_check(fake_host(tmp_path), "23.0.rc2")
    assert (check.status, check.facts["version"]) == ("ok", "23.0.rc2")
    assert "from npu-smi" in check.detail


def test_no_driver_at_all_is_absent(tmp_path: Path) -> None:
    check = driver_check(fake_host(tmp_path), None)
    assert check.status == "absent"
    assert check.detail.startswith("not found — no /usr/local/Ascend/driver/version.info")


def test_the_firmware_version_is_read(tmp_path: Path) -> None:
    host = fake_host(tmp_path)
    install_firmware(host.root, "7.1.0.3.220")
    check = firmware_check(host, None, {})
    assert (check.status, check.facts["version"]) == ("ok", "7.1.0.3.220")


def test_missing_firmware_in_a_container_is_absent_and_explained(tmp_path: Path) -> None:
    check = firmware_check(fake_host(tmp_path), "/.dockerenv", {})
    assert check.status == "absent"
    assert "containers seldom mount it" in check.detail


def test_an_unreadable_version_file_counts_as_missing(tmp_path: Path) -> None:
    host = fake_host(tmp_path)
    (host.root / "usr/local/Ascend/firmware/version.info").mkdir(parents=True)
    assert firmware_check(host, None, {}).status == "absent"


def test_without_a_version_file_the_firmware_the_npus_run_is_reported(tmp_path: Path) -> None:
    check = firmware_check(fake_host(tmp_path), "/.dockerenv", {0: "7.1.0.7.220", 1: "7.1.0.7.220"})
    assert check.status == "ok"
    assert check.detail.startswith("7.1.0.7.220 (from npu-smi info -t board; no ")
    assert check.facts["version"] == "7.1.0.7.220"
    assert check.facts["running"] == {"0": "7.1.0.7.220", "1": "7.1.0.7.220"}


def test_installed_firmware_the_npus_run_is_ok(tmp_path: Path) -> None:
    host = fake_host(tmp_path)
    install_firmware(host.root, "7.1.0.7.220")
    check = firmware_check(host, None, {0: "7.1.0.7.220"})
    assert (check.status, check.detail.endswith("; the NPUs run it")) == ("ok", True)


def test_installed_firmware_not_yet_running_asks_for_a_power_cycle(tmp_path: Path) -> None:
    host = fake_host(tmp_path)
    install_firmware(host.root, "7.8.0.6.201")
    check = firmware_check(host, None, {0: "7.1.0.7.220", 1: "7.1.0.7.220"})
    assert check.status == "warn"
    assert "is installed, but the NPUs run 7.1.0.7.220" in check.detail
    assert check.action is not None and check.action.startswith("power-cycle the host")


def test_npus_running_different_firmware_are_named(tmp_path: Path) -> None:
    host = fake_host(tmp_path)
    install_firmware(host.root, "7.1.0.7.220")
    running = {0: "7.1.0.7.220", 1: "7.1.0.7.220", 7: "7.1.0.6.100"}
    check = firmware_check(host, None, running)
    assert (check.status, check.detail) == (
        "warn",
        "the NPUs run different firmware: 7.1.0.7.220 on NPU 0, 1; 7.1.0.6.100 on NPU 7",
    )


def frameworks(tmp_path: Path, **packages: str) -> dict[str, tuple[str, str]]:
    checks = framework_checks(fake_host(tmp_path, packages=packages))
    return {check.title: (check.status, check.detail) for check in checks}


def test_matching_torch_and_torch_npu_are_ok(tmp_path: Path) -> None:
    found = frameworks(tmp_path, torch="2.1.0+cpu", torch_npu="2.1.0.post3")
    assert found == {
        "torch": ("ok", "2.1.0+cpu (in /opt/venv/bin/python)"),
        "torch_npu": ("ok", "2.1.0.post3 (for torch 2.1, in /opt/venv/bin/python)"),
    }


def test_a_torch_npu_built_for_another_torch_fails_and_names_the_release_to_install(
    tmp_path: Path,
) -> None:
    checks = framework_checks(
        fake_host(tmp_path, packages={"torch": "2.4.0", "torch_npu": "2.1.0.post3"})
    )
    npu = checks[1]
    assert npu.status == "fail"
    assert "2.1.0.post3 is built for torch 2.1, but torch is 2.4.0" in npu.detail
    assert npu.action is not None and npu.action.startswith("pip install torch_npu==2.4.*")


def test_torch_npu_without_torch_fails(tmp_path: Path) -> None:
    status, detail = frameworks(tmp_path, torch_npu="2.1.0.post3")["torch_npu"]
    assert status == "fail"
    assert "torch is not" in detail


@pytest.mark.parametrize(
    ("packages", "expected"),
    [
        ({}, "not installed (in /opt/venv/bin/python)"),
        ({"torch": "2.1.0"}, "not installed (in /opt/venv/bin/python); torch runs on the CPU only"),
    ],
)
def test_a_missing_torch_npu_is_absent(
    tmp_path: Path, packages: dict[str, str], expected: str
) -> None:
    assert frameworks(tmp_path, **packages)["torch_npu"] == ("absent", expected)


def test_a_component_version_info_is_enough_for_a_toolkit(tmp_path: Path) -> None:
    host = fake_host(tmp_path)
    write(
        host.root / "usr/local/Ascend/ascend-toolkit/latest/compiler/version.info",
        "Version=6.0.RC1\n",
    )
    check = toolkit_check(find_toolkits(host, DoctorOptions()))
    assert (check.status, check.facts["version"]) == ("ok", "6.0.RC1")
