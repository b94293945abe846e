"""docs › "Run as a service" (docs/guides/service.md) works on a fresh host: each of its commands, run into a
temporary root by tests/install/service_steps.py, does what the guide says it does, up to
`systemd-analyze verify` of the unit that the guide's drop-in points at the environment."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tests.deploy.test_systemd_unit import parse_unit, verify_file
from tests.install.installing import Artefacts, run, succeeded
from tests.install.service_steps import ServiceRoot

pytestmark = pytest.mark.integration


def test_every_step_that_needs_no_running_systemd_succeeds(service_root: ServiceRoot) -> None:
    for result in service_root.results.values():
        succeeded(result)
    assert [command.split()[:2] for command in service_root.skipped] == [
        ["systemctl", "status"],
        ["journalctl", "-u"],
        ["systemctl", "reload"],
    ]


def test_the_environment_holds_the_wheel_and_root_s_path_finds_it(
    service_root: ServiceRoot, artefacts: Artefacts
) -> None:
    link = service_root.root / "usr" / "local" / "bin" / "npuwatch"
    assert link.resolve() == (service_root.environment / "bin" / "npuwatch").resolve()
    version = succeeded(run([link, "--version"], service_root.root))
    assert version.stdout == f"npuwatch {artefacts.version} (C speedups on)\n"


def test_the_configuration_folder_is_made_before_the_example_is_written_into_it(
    service_root: ServiceRoot,
) -> None:
    folder = service_root.root / "etc" / "npuwatch"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755
    npuwatch = service_root.environment / "bin" / "npuwatch"
    example = succeeded(run([npuwatch, "config", "example"], folder))
    assert (folder / "npuwatch.toml").read_text(encoding="utf-8") == example.stdout


def test_config_check_accepts_the_written_file_and_the_installed_rule_packs(
    service_root: ServiceRoot,
) -> None:
    lines = service_root.result("npuwatch config check").stdout.splitlines()
    assert lines[0] == f"{service_root.root}/etc/npuwatch/npuwatch.toml: ok"
    packs = next(service_root.environment.glob("lib/python*/site-packages/npuwatch/rules/packs"))
    assert lines[-1].startswith("rules: ")
    assert lines[-1].endswith(f" packs from {packs}")


def test_the_unit_is_enabled_for_the_boot_target(service_root: ServiceRoot) -> None:
    wants = service_root.unit.parent / "multi-user.target.wants" / "npuwatch.service"
    assert wants.is_symlink()
    assert wants.readlink() == Path("/etc/systemd/system/npuwatch.service")


def test_the_readme_s_drop_in_points_the_unit_at_the_environment_and_systemd_accepts_it(
    service_root: ServiceRoot,
) -> None:
    drop_in = parse_unit(service_root.drop_in.read_text(encoding="utf-8"))
    npuwatch = service_root.environment / "bin" / "npuwatch"
    assert drop_in["Service"]["ExecStartPre"] == ["", f"{npuwatch} config check"]
    assert drop_in["Service"]["ExecStart"] == ["", f"{npuwatch} agent"]
    returncode, complaints = verify_file(service_root.unit)
    assert complaints == []
    assert returncode == 0
