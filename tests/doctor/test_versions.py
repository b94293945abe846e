"""Reading the version files of an Ascend install and finding the toolkits."""

from __future__ import annotations

from pathlib import Path

import pytest

from npuwatch.doctor.host import DoctorOptions
from npuwatch.doctor.versions import (
    bracketed_version,
    find_toolkits,
    read_key_values,
    toolkit_version,
    version_from_info,
    version_from_version_cfg,
)
from tests.doctor.fake_host import (
    driver_version_info,
    fake_host,
    firmware_version_info,
    install_toolkit,
    version_cfg,
    write,
)


def test_version_cfg_gives_the_public_version_of_the_running_toolkit() -> None:
    assert version_from_version_cfg(version_cfg("7.0.0", "7.0.0.5.242")) == "7.0.0"


def test_version_cfg_prefers_the_running_version_to_the_installed_one() -> None:
    text = (
        "toolkit_installed_version=[8.0.0.1:8.0.RC1]\nruntime_running_version=[7.0.0.5.242:7.0.0]\n"
    )
    assert version_from_version_cfg(text) == "7.0.0"


def test_version_cfg_with_only_installed_versions_gives_the_last_bracket() -> None:
    text = "# version: 1.0\ntoolkit_installed_version=[7.0.0.5.242:7.0.0][8.0.0.1:8.0.RC1]\n"
    assert version_from_version_cfg(text) == "8.0.RC1"


def test_version_cfg_of_an_unknown_component_still_gives_a_version() -> None:
    assert version_from_version_cfg("nnae_running_version=[6.3.0.1.100:6.3.RC1]\n") == "6.3.RC1"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("[7.0.0.5.242:7.0.0]", "7.0.0"),
        ("[7.0.0.5.242]", "7.0.0.5.242"),
        ("[7.0.0.5.242:]", "7.0.0.5.242"),
        ("8.0.RC2", "8.0.RC2"),
        ("[]", None),
    ],
)
def test_a_bracketed_value_reads_leniently(value: str, expected: str | None) -> None:
    assert bracketed_version(value) == expected


def test_key_value_files_ignore_comments_blank_and_other_lines() -> None:
    text = "# version: 1.0\n\nnot a pair\n Version = 23.0.rc3 \n=orphan\n"
    assert read_key_values(text) == {"version": "23.0.rc3"}


def test_info_files_give_version_in_any_case_and_fall_back_to_package_version() -> None:
    assert version_from_info(driver_version_info("23.0.rc3")) == "23.0.rc3"
    assert version_from_info(firmware_version_info("7.1.0.3.220", "23.0.rc3")) == "7.1.0.3.220"
    assert version_from_info("package_name=x\nversion=7.0.0\n") == "7.0.0"
    assert version_from_info("package_version=24.1.rc2\n") == "24.1.rc2"
    assert version_from_info("arch=x86_64\n") is None


def test_a_toolkit_without_version_cfg_is_read_from_its_install_info(tmp_path: Path) -> None:
    folder = install_toolkit(tmp_path, "8.0.RC1", "8.0.0.1", cfg=False)
    found = toolkit_version(folder)
    assert found is not None
    assert (found.version, found.path.name) == ("8.0.RC1", "ascend_toolkit_install.info")


def test_a_toolkit_with_only_a_component_version_info_is_read_from_it(tmp_path: Path) -> None:
    write(tmp_path / "tk/runtime/version.info", "Version=6.0.RC1\nversion_dir=6.0.RC1\n")
    found = toolkit_version(tmp_path / "tk")
    assert found is not None and found.version == "6.0.RC1"


def test_latest_and_the_folder_it_links_to_are_one_toolkit(tmp_path: Path) -> None:
    host = fake_host(tmp_path)
    install_toolkit(host.root, "7.0.0")
    folders = [f for f in find_toolkits(host, DoctorOptions()) if f.exists]
    assert [(f.folder.name, f.found.version if f.found else None) for f in folders] == [
        ("latest", "7.0.0")
    ]


def test_the_environment_comes_first_then_latest_then_other_versions(tmp_path: Path) -> None:
    host = fake_host(tmp_path)
    install_toolkit(host.root, "7.0.0")
    install_toolkit(host.root, "8.0.RC1", "8.0.0.1", latest=False)
    chosen = install_toolkit(tmp_path / "elsewhere", "6.3.RC2", "6.3.0.2")
    host = fake_host(tmp_path, {"ASCEND_TOOLKIT_HOME": str(chosen)})
    found = [
        (f.named_by, f.found.version if f.found else None)
        for f in find_toolkits(host, DoctorOptions())
        if f.exists
    ]
    assert found == [
        ("$ASCEND_TOOLKIT_HOME", "6.3.RC2"),
        ("default location", "7.0.0"),
        ("default location", "8.0.RC1"),
    ]


def test_a_toolkit_in_the_users_home_is_found(tmp_path: Path) -> None:
    host = fake_host(tmp_path)
    folder = write(
        Path(host.environ["HOME"]) / "Ascend/ascend-toolkit/7.0.0/version.cfg",
        version_cfg("7.0.0", "7.0.0.5.242"),
    ).parent
    (folder.parent / "latest").symlink_to(folder)
    found = [f for f in find_toolkits(host, DoctorOptions()) if f.found]
    assert [f.found.version for f in found if f.found] == ["7.0.0"]


def test_the_toolkit_option_replaces_the_search(tmp_path: Path) -> None:
    host = fake_host(tmp_path)
    install_toolkit(host.root, "7.0.0")
    mine = install_toolkit(tmp_path / "opt", "8.0.RC1", "8.0.0.1")
    folders = find_toolkits(host, DoctorOptions(toolkit=mine))
    assert [(f.folder, f.named_by) for f in folders] == [(mine, "--toolkit")]
