"""The systemd unit: systemd itself accepts it, and it keeps the contract the agent relies on."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.install.readme_blocks import fenced_blocks
from tests.npuwatch_command import clean_environment, run_npuwatch

UNIT = REPO / "deploy" / "systemd" / "npuwatch.service"
INSTALLED_COMMAND = "/opt/npuwatch/bin/npuwatch"
"""npuwatch in its own virtual environment (docs › "Run as a service")."""
AGENT_DRAIN_TIMEOUT_SECONDS = 60.0
"""The agent's default drain_timeout: systemd must wait longer than that before SIGKILL."""

Unit = dict[str, dict[str, list[str]]]


def parse_unit(text: str) -> Unit:
    """Sections → keys → every value in order (systemd allows a key more than once)."""
    unit: Unit = {}
    section: dict[str, list[str]] | None = None
    lines = iter(text.splitlines())
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = unit.setdefault(line[1:-1], {})
            continue
        while line.endswith("\\"):
            line = line[:-1] + " " + next(lines).strip()
        assert section is not None, f"{raw!r} comes before any [Section]"
        key, sep, value = line.partition("=")
        assert sep, f"{raw!r} is not Key=value"
        section.setdefault(key.strip(), []).append(value.strip())
    return unit


def seconds(span: str) -> float:
    """A systemd time span such as `90s`, `1min 30s` or a bare number of seconds."""
    units = {"ms": 0.001, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "": 1.0}
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*([a-z]*)", span)
    assert parts, f"not a time span: {span!r}"
    assert "".join(n + u for n, u in parts) == span.replace(" ", ""), f"not a time span: {span!r}"
    return sum(float(number) * units[unit] for number, unit in parts)


@pytest.fixture(scope="module")
def unit() -> Unit:
    return parse_unit(UNIT.read_text(encoding="utf-8"))


def only(unit: Unit, section: str, key: str) -> str:
    values = unit[section].get(key, [])
    assert len(values) == 1, f"[{section}] {key}= should be set once, is {values}"
    return values[0]


# What the agent and the operators rely on


def test_the_service_tells_systemd_when_it_is_ready(unit: Unit) -> None:
    assert only(unit, "Service", "Type") == "notify"
    assert only(unit, "Service", "NotifyAccess") == "main"


def test_the_service_has_a_watchdog(unit: Unit) -> None:
    assert seconds(only(unit, "Service", "WatchdogSec")) > 0


def test_systemd_waits_longer_than_the_agent_drains_before_killing_it(unit: Unit) -> None:
    assert seconds(only(unit, "Service", "TimeoutStopSec")) > AGENT_DRAIN_TIMEOUT_SECONDS


def test_the_configuration_is_checked_before_the_agent_starts(unit: Unit) -> None:
    assert only(unit, "Service", "ExecStartPre") == f"{INSTALLED_COMMAND} config check"
    assert only(unit, "Service", "ExecStart") == f"{INSTALLED_COMMAND} agent"


def test_the_journal_lives_in_the_state_directory(unit: Unit) -> None:
    assert only(unit, "Service", "StateDirectory") == "npuwatch"


def test_the_state_directory_is_for_the_agent_alone(unit: Unit) -> None:
    """The journal keeps whole log lines: no other user may read them."""
    assert only(unit, "Service", "StateDirectoryMode") == "0700"


def test_home_folders_stay_readable_for_the_cann_logs(unit: Unit) -> None:
    assert only(unit, "Service", "ProtectHome") == "read-only"


def test_the_npu_devices_stay_visible(unit: Unit) -> None:
    assert "PrivateDevices" not in unit["Service"]


def test_a_missing_read_only_path_does_not_stop_the_unit_from_starting(unit: Unit) -> None:
    paths = [path for value in unit["Service"]["ReadOnlyPaths"] for path in value.split()]
    assert paths
    assert all(path.startswith("-") for path in paths), paths


def test_the_service_restarts_after_a_failure(unit: Unit) -> None:
    assert only(unit, "Service", "Restart") == "on-failure"


def test_the_service_is_enabled_for_the_normal_boot_target(unit: Unit) -> None:
    assert only(unit, "Install", "WantedBy") == "multi-user.target"


# systemd's own verdict


def installed_npuwatch() -> Path:
    """The `npuwatch` console script of the Python that runs the tests."""
    beside_python = Path(sys.executable).parent / "npuwatch"
    if beside_python.is_file():
        return beside_python
    found = shutil.which("npuwatch")
    if found is None:
        pytest.fail("the npuwatch command is not installed: run `pip install -e .` first")
    return Path(found)


def systemd_analyze() -> str:
    found = shutil.which("systemd-analyze")
    if found is None:
        pytest.fail(
            "systemd-analyze is not installed, so the unit cannot be verified: "
            "install Debian's systemd package (apt-get install systemd)"
        )
    return found


def verify(unit_text: str, folder: Path) -> tuple[int, list[str]]:
    """Run `systemd-analyze verify` on a copy of the unit whose commands exist on this machine;
    return its exit code and the lines it printed about the unit."""
    copy = folder / UNIT.name
    copy.write_text(unit_text.replace(INSTALLED_COMMAND, str(installed_npuwatch())))
    return verify_file(copy)


def verify_file(unit: Path) -> tuple[int, list[str]]:
    """`systemd-analyze verify` of the unit at `unit`, with the drop-ins beside it: its exit
    code and the lines it printed about the unit."""
    result = subprocess.run(
        [systemd_analyze(), "verify", str(unit)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # It may also talk about this machine (no systemd running in a container); only the lines
    # about the unit are its verdict on our file.
    output = (result.stdout + result.stderr).splitlines()
    return result.returncode, [line for line in output if unit.name in line]


@pytest.mark.integration
def test_systemd_analyze_verify_accepts_the_unit_without_a_word(tmp_path: Path) -> None:
    returncode, complaints = verify(UNIT.read_text(encoding="utf-8"), tmp_path)
    assert complaints == []
    assert returncode == 0


@pytest.mark.integration
def test_systemd_analyze_verify_would_catch_a_mistake_in_the_unit(tmp_path: Path) -> None:
    broken = UNIT.read_text(encoding="utf-8").replace("TimeoutStopSec=", "TimeoutStopSecs=")
    _, complaints = verify(broken, tmp_path)
    assert any("Unknown key" in line and "TimeoutStopSecs" in line for line in complaints)


def readme_drop_in() -> str:
    (block,) = fenced_blocks(REPO / "docs" / "guides" / "service.md", "## Run as a service", "ini")
    return "\n".join(block) + "\n"


def test_the_readme_s_drop_in_replaces_both_commands_and_nothing_else() -> None:
    drop_in = parse_unit(readme_drop_in())
    assert set(drop_in) == {"Service"}
    assert set(drop_in["Service"]) == {"ExecStartPre", "ExecStart"}
    # An empty assignment first: a second ExecStart= would be an error, a second
    # ExecStartPre= would run both checks.
    prefix = "/srv/npuwatch/bin/npuwatch"
    assert drop_in["Service"]["ExecStartPre"] == ["", f"{prefix} config check"]
    assert drop_in["Service"]["ExecStart"] == ["", f"{prefix} agent"]


@pytest.mark.integration
def test_the_readme_s_drop_in_points_the_unit_at_npuwatch_installed_elsewhere(
    tmp_path: Path,
) -> None:
    unit = tmp_path / UNIT.name
    unit.write_text(UNIT.read_text(encoding="utf-8"))
    drop_in = tmp_path / f"{UNIT.name}.d" / "override.conf"
    drop_in.parent.mkdir()
    elsewhere = str(installed_npuwatch())
    drop_in.write_text(readme_drop_in().replace("/srv/npuwatch/bin/npuwatch", elsewhere))
    returncode, complaints = verify_file(unit)
    assert complaints == []
    assert returncode == 0
    if not Path(INSTALLED_COMMAND).exists():
        # Without the drop-in, systemd looks for npuwatch where the unit says it is.
        drop_in.unlink()
        _, complaints = verify_file(unit)
        assert any(INSTALLED_COMMAND in line and "not executable" in line for line in complaints)


# The cluster correlator's unit

CORRELATOR_UNIT = REPO / "deploy" / "systemd" / "npuwatch-correlate.service"


@pytest.fixture(scope="module")
def correlator_unit() -> Unit:
    return parse_unit(CORRELATOR_UNIT.read_text(encoding="utf-8"))


def test_the_correlator_checks_its_configuration_then_correlates(correlator_unit: Unit) -> None:
    assert only(correlator_unit, "Service", "Type") == "notify"
    assert seconds(only(correlator_unit, "Service", "WatchdogSec")) > 0
    assert only(correlator_unit, "Service", "ExecStartPre") == (
        f"{INSTALLED_COMMAND} correlate --check"
    )
    assert only(correlator_unit, "Service", "ExecStart") == f"{INSTALLED_COMMAND} correlate"
    assert only(correlator_unit, "Service", "Restart") == "on-failure"
    assert only(correlator_unit, "Install", "WantedBy") == "multi-user.target"


def test_the_correlator_keeps_nothing_on_the_host(correlator_unit: Unit) -> None:
    """It reads and writes only the search engine: no state directory, no home, no device."""
    assert "StateDirectory" not in correlator_unit["Service"]
    assert only(correlator_unit, "Service", "ProtectHome") == "yes"
    assert only(correlator_unit, "Service", "PrivateDevices") == "yes"


@pytest.mark.integration
def test_systemd_analyze_verify_accepts_the_correlator_unit_without_a_word(
    tmp_path: Path,
) -> None:
    copy = tmp_path / CORRELATOR_UNIT.name
    text = CORRELATOR_UNIT.read_text(encoding="utf-8")
    copy.write_text(text.replace(INSTALLED_COMMAND, str(installed_npuwatch())))
    returncode, complaints = verify_file(copy)
    assert complaints == []
    assert returncode == 0


# Least privilege: what systemd lets each service do


def exposure(unit: Path) -> float:
    """The overall exposure `systemd-analyze security --offline=yes` rates the unit at
    (0 = locked down, 10 = everything allowed)."""
    result = subprocess.run(
        [systemd_analyze(), "security", "--offline=yes", "--no-pager", str(unit)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    found = re.search(
        rf"Overall exposure level for {re.escape(unit.name)}: (\d+\.\d+)", result.stdout
    )
    assert found is not None, result.stdout + result.stderr
    return float(found[1])


@pytest.mark.integration
def test_systemd_rates_the_agent_s_unit_at_most_4_5() -> None:
    assert exposure(UNIT) <= 4.5


@pytest.mark.integration
def test_systemd_rates_the_correlator_s_unit_at_most_2_5() -> None:
    assert exposure(CORRELATOR_UNIT) <= 2.5


def test_the_agent_keeps_only_the_capability_to_read_every_user_s_files(unit: Unit) -> None:
    """It reads the logs of every user and writes none of their files: no DAC_OVERRIDE."""
    assert only(unit, "Service", "CapabilityBoundingSet") == "CAP_DAC_READ_SEARCH"
    assert "AmbientCapabilities" not in unit["Service"]
    assert only(unit, "Service", "NoNewPrivileges") == "yes"


def test_the_agent_reaches_no_device_but_the_npu_s(unit: Unit) -> None:
    assert only(unit, "Service", "DevicePolicy") == "closed"
    allowed = unit["Service"]["DeviceAllow"]
    assert allowed, "npu-smi needs the NPU's device nodes"
    assert all(
        re.fullmatch(r"/dev/(davinci\d+|davinci_manager|devmm_svm|hisi_hdc) rw", a) for a in allowed
    )


@pytest.mark.parametrize("unit_file", [UNIT, CORRELATOR_UNIT], ids=["agent", "correlator"])
def test_each_service_creates_private_files_and_filters_its_system_calls(unit_file: Path) -> None:
    service = parse_unit(unit_file.read_text(encoding="utf-8"))["Service"]
    assert service["UMask"] == ["0077"]
    assert service["SystemCallArchitectures"] == ["native"]
    assert service["SystemCallFilter"] == ["@system-service", "~@privileged @resources"]
    families = set(service["RestrictAddressFamilies"][0].split())
    assert (
        {"AF_UNIX", "AF_INET", "AF_INET6"}
        <= families
        <= {"AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK"}
    )


def test_the_correlator_runs_as_a_user_of_its_own_without_capabilities(
    correlator_unit: Unit,
) -> None:
    assert only(correlator_unit, "Service", "DynamicUser") == "yes"
    assert only(correlator_unit, "Service", "CapabilityBoundingSet") == ""
    assert "User" not in correlator_unit["Service"]


def documented_credential_drop_in() -> dict[str, str]:
    """The LoadCredential= and Environment= lines the correlator's unit gives in its comments
    for the search engine's API key file."""
    lines = [
        line.removeprefix("#").strip()
        for line in CORRELATOR_UNIT.read_text(encoding="utf-8").splitlines()
        if line.startswith("#   ")
    ]
    settings = dict(line.split("=", 1) for line in lines if "=" in line)
    assert set(settings) == {"LoadCredential", "Environment"}, lines
    return settings


def test_the_correlator_s_credential_drop_in_lets_it_read_root_s_secret_through_a_copy(
    tmp_path: Path,
) -> None:
    """What systemd does with the documented drop-in, done by hand: the secret stays where the
    configuration names it, root's and out of reach; the copy in $CREDENTIALS_DIRECTORY (0400,
    the service's own) is what the variable points the check at."""
    drop_in = documented_credential_drop_in()
    credential, _, source = drop_in["LoadCredential"].partition(":")
    variable, _, value = drop_in["Environment"].partition("=")
    credentials = tmp_path / "credentials"
    credentials.mkdir(mode=0o700)
    copy = credentials / credential
    copy.write_text("c2VjcmV0LWlkOnNlY3JldC1rZXk=\n", encoding="utf-8")
    copy.chmod(0o400)
    config = tmp_path / "npuwatch.toml"
    config.write_text(
        f'[sinks.elasticsearch]\nhosts = ["https://es.example:9200"]\napi_key_file = "{source}"\n',
        encoding="utf-8",
    )
    environment = clean_environment(
        CREDENTIALS_DIRECTORY=str(credentials), **{variable: value.replace("%d", str(credentials))}
    )

    done = run_npuwatch("correlate", "--check", "--config", str(config), env=environment)

    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
