"""The Environment checks: CANN toolkit, driver, firmware, torch and torch_npu."""

from __future__ import annotations

import re
from collections.abc import Mapping

from npuwatch.doctor.host import Host
from npuwatch.doctor.report import Check, Status
from npuwatch.doctor.versions import (
    TOOLKIT_HOME,
    ToolkitFolder,
    VersionFile,
    read_version_file,
)

DRIVER_VERSION_FILE = "/usr/local/Ascend/driver/version.info"
FIRMWARE_VERSION_FILE = "/usr/local/Ascend/firmware/version.info"
_SET_ENV = f"source {TOOLKIT_HOME}/set_env.sh"
_MAJOR_MINOR = re.compile(r"^(\d+)\.(\d+)")


def toolkit_check(folders: list[ToolkitFolder]) -> Check:
    """Which CANN toolkit is installed, where, and whether the environment names a real one."""
    installs = [folder.found for folder in folders if folder.found is not None]
    facts: dict[str, object] = {
        "version": installs[0].version if installs else None,
        "installations": [
            {
                "folder": str(folder.folder),
                "named_by": folder.named_by,
                "version": folder.found.version if folder.found else None,
                "version_file": str(folder.found.path) if folder.found else None,
            }
            for folder in folders
            if folder.exists
        ],
    }

    def check(status: Status, detail: str, action: str | None = None) -> Check:
        return Check("cann.toolkit", "environment", "CANN toolkit", status, detail, action, facts)

    missing = [f for f in folders if not f.exists and f.named_by.startswith(("$", "--"))]
    if missing:
        named = missing[0]
        installed = f" (installed: {_describe(installs[0])})" if installs else ""
        return check(
            "warn",
            f"{named.named_by} names {named.folder}, which does not exist{installed}",
            f"{_SET_ENV} (the set_env.sh of an installed toolkit) in the job's shell",
        )
    if not installs:
        empty = [f for f in folders if f.exists]
        if empty:
            return check(
                "warn",
                f"{empty[0].folder} has no version.cfg or *_install.info: an incomplete install?",
                "reinstall the CANN toolkit package (Ascend-cann-toolkit_*.run --install)",
            )
        looked = ", ".join(str(f.folder) for f in folders)
        return check("absent", f"not found (looked in {looked})")
    detail = _describe(installs[0])
    others = sorted({found.version for found in installs[1:]} - {installs[0].version})
    if others:
        detail += f"; also installed: {', '.join(others)}"
    return check("ok", detail)


def _describe(found: VersionFile) -> str:
    return f"{found.version} ({found.path})"


def driver_check(host: Host, npu_smi_driver: str | None) -> Check:
    """The installed driver (version.info) and the one npu-smi reports, which should agree."""
    installed = read_version_file(host.at(DRIVER_VERSION_FILE))
    facts: dict[str, object] = {
        "version": installed.version if installed else npu_smi_driver,
        "version_file": str(installed.path) if installed else None,
        "npu_smi_version": npu_smi_driver,
    }
    if installed is None and npu_smi_driver is None:
        return Check(
            "cann.driver",
            "environment",
            "driver",
            "absent",
            f"not found — no {DRIVER_VERSION_FILE} and no version from npu-smi",
            facts=facts,
        )
    if installed is None:
        assert npu_smi_driver is not None
        return Check(
            "cann.driver",
            "environment",
            "driver",
            "ok",
            f"{npu_smi_driver} (from npu-smi; no {DRIVER_VERSION_FILE} here)",
            facts=facts,
        )
    if npu_smi_driver is not None and npu_smi_driver.lower() != installed.version.lower():
        return Check(
            "cann.driver",
            "environment",
            "driver",
            "warn",
            f"{_describe(installed)} is installed, but npu-smi reports {npu_smi_driver}",
            action="reboot (or reload the driver) so that the running driver is the installed one",
            facts=facts,
        )
    agreed = "; npu-smi agrees" if npu_smi_driver is not None else ""
    detail = _describe(installed) + agreed
    return Check("cann.driver", "environment", "driver", "ok", detail, facts=facts)


def firmware_check(host: Host, container: str | None, running: Mapping[int, str]) -> Check:
    """The installed firmware (version.info) and what each NPU runs (`npu-smi info -t board`).

    A firmware upgrade takes effect only after a power cycle, so an installed version that no
    NPU runs, or NPUs that run different versions, means a host not rebooted since an upgrade
    (or an upgrade that failed on some NPUs).
    """
    found = read_version_file(host.at(FIRMWARE_VERSION_FILE))
    npus_of: dict[str, list[int]] = {}
    for npu_id, version in sorted(running.items()):
        npus_of.setdefault(version, []).append(npu_id)
    # The version most NPUs run first: the others are the ones left behind.
    by_version = dict(sorted(npus_of.items(), key=lambda item: -len(item[1])))
    facts: dict[str, object] = {
        "version": found.version if found else next(iter(by_version), None),
        "version_file": str(found.path) if found else None,
        "running": {str(npu_id): version for npu_id, version in sorted(running.items())},
    }

    def check(status: Status, detail: str, action: str | None = None) -> Check:
        return Check("cann.firmware", "environment", "firmware", status, detail, action, facts)

    if len(by_version) > 1:
        spread = "; ".join(
            f"{version} on NPU {', '.join(map(str, npus))}" for version, npus in by_version.items()
        )
        return check(
            "warn",
            f"the NPUs run different firmware: {spread}",
            "install the firmware package again and power-cycle the host, so that every NPU "
            "runs one version",
        )
    if found is None:
        if by_version:
            version = next(iter(by_version))
            return check(
                "ok", f"{version} (from npu-smi info -t board; no {FIRMWARE_VERSION_FILE} here)"
            )
        where = " (containers seldom mount it)" if container else ""
        return check("absent", f"not found — no {FIRMWARE_VERSION_FILE}{where}")
    if by_version and found.version.lower() not in {v.lower() for v in by_version}:
        return check(
            "warn",
            f"{_describe(found)} is installed, but the NPUs run {next(iter(by_version))}",
            "power-cycle the host: an upgraded firmware runs only after a reboot",
        )
    agreed = "; the NPUs run it" if by_version else ""
    return check("ok", _describe(found) + agreed)


def framework_checks(host: Host) -> list[Check]:
    """torch and torch_npu as installed in doctor's Python (read from metadata, not imported)."""
    torch = host.package_version("torch")
    torch_npu = host.package_version("torch_npu")
    where = f"in {host.python}"
    torch_check = Check(
        "framework.torch",
        "environment",
        "torch",
        "ok" if torch else "absent",
        f"{torch} ({where})" if torch else f"not installed ({where})",
        facts={"version": torch, "python": host.python},
    )
    facts: dict[str, object] = {"version": torch_npu, "python": host.python}
    if torch_npu is None:
        detail = f"not installed ({where})" + ("; torch runs on the CPU only" if torch else "")
        npu_check = Check(
            "framework.torch_npu", "environment", "torch_npu", "absent", detail, facts=facts
        )
        return [torch_check, npu_check]
    if torch is None:
        npu_check = Check(
            "framework.torch_npu",
            "environment",
            "torch_npu",
            "fail",
            f"{torch_npu} is installed but torch is not ({where}): import torch_npu fails",
            action=f"pip install torch=={_series(torch_npu)}.* (the torch torch_npu is built for)",
            facts=facts,
        )
        return [torch_check, npu_check]
    if _series(torch_npu) != _series(torch):
        npu_check = Check(
            "framework.torch_npu",
            "environment",
            "torch_npu",
            "fail",
            f"{torch_npu} is built for torch {_series(torch_npu)}, but torch is {torch} ({where})",
            action=f"pip install torch_npu=={_series(torch)}.* (the release for torch {torch})",
            facts=facts,
        )
        return [torch_check, npu_check]
    npu_check = Check(
        "framework.torch_npu",
        "environment",
        "torch_npu",
        "ok",
        f"{torch_npu} (for torch {_series(torch)}, {where})",
        facts=facts,
    )
    return [torch_check, npu_check]


def _series(version: str) -> str:
    """`2.1` of 2.1.0.post3 or 2.1.0+cpu: torch_npu releases follow torch's major.minor."""
    match = _MAJOR_MINOR.match(version)
    return f"{match[1]}.{match[2]}" if match else version
