"""A fake Ascend host under tmp_path: an install tree, /dev nodes, an environment, packages.

The version files are synthetic text in the formats of real installs: the toolkit's version.cfg
(`<component>_<state>_version=[<inner>:<public>]` after a `# version: 1.0` line), the
`<arch>-linux/ascend_toolkit_install.info` (`version=`), and the driver's and firmware's
`version.info` (`Version=`, `package_version=`, compatible version ranges).
"""

from __future__ import annotations

import os
from pathlib import Path

from npuwatch.doctor.host import Host
from npuwatch.speedups import EXTENSIONS, Speedups
from tests.npu_smi_samples import FAKE_NPU_SMI, load_doc_samples, table_only

GIB = 1 << 30

SPEEDUPS_ON = Speedups(tuple(EXTENSIONS), {})
"""npuwatch's own C extensions, as a wheel built for the host has them."""

_COMPONENTS = ("runtime", "compiler", "hccl", "opp", "toolkit", "aoe", "ncs")


def version_cfg(public: str, inner: str) -> str:
    lines = ["# version: 1.0"]
    for state in ("running", "upgrade", "installed"):
        lines += [f"{component}_{state}_version=[{inner}:{public}]" for component in _COMPONENTS]
    return "\n".join(lines) + "\n"


def toolkit_install_info(version: str, folder: Path) -> str:
    return (
        "package_name=Ascend-cann-toolkit\n"
        f"version={version}\n"
        "innerversion=V100R001C15SPC001B242\n"
        "compatible_version=[V100R001C29],[V100R001C30],[V100R001C13],[V100R001C15]\n"
        "arch=x86_64\n"
        "os=linux\n"
        f"path={folder}/x86_64-linux\n"
    )


def driver_version_info(version: str) -> str:
    return (
        f"Version={version}\n"
        "ascendhal_version=7.35.19\n"
        "aicpu_version=1.0\n"
        "tdt_version=1.0\n"
        "log_version=1.0\n"
        "prof_version=2.0\n"
        "dvppkernels_version=1.1\n"
        "tsfw_version=1.0\n"
        "Innerversion=V100R001C13SPC003B220\n"
        "compatible_version=[V100R001C30],[V100R001C13],[V100R001C15],[V100R001C17]\n"
        "compatible_version_fw=[7.0.0,7.1.99]\n"
        f"package_version={version}\n"
    )


def firmware_version_info(version: str, driver: str) -> str:
    return (
        f"Version={version}\n"
        "firmware_version=1.0\n"
        f"package_version={driver}\n"
        f"compatible_version_drv=[{driver},{driver}.]\n"
    )


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def install_toolkit(
    root: Path,
    public: str = "7.0.0",
    inner: str = "7.0.0.5.242",
    *,
    latest: bool = True,
    cfg: bool = True,
) -> Path:
    """A toolkit under <root>/usr/local/Ascend/ascend-toolkit/<public>, `latest` linking to it."""
    home = root / "usr/local/Ascend/ascend-toolkit"
    folder = home / public
    if cfg:
        write(folder / "version.cfg", version_cfg(public, inner))
    write(folder / "x86_64-linux/ascend_toolkit_install.info", toolkit_install_info(public, folder))
    write(home / "set_env.sh", "export ASCEND_TOOLKIT_HOME=...\n")
    if latest:
        link = home / "latest"
        if link.is_symlink():
            link.unlink()
        link.symlink_to(public)
    return folder


def install_driver(root: Path, version: str = "23.0.rc2") -> Path:
    return write(root / "usr/local/Ascend/driver/version.info", driver_version_info(version))


def install_firmware(root: Path, version: str = "7.1.0.3.220", driver: str = "23.0.rc2") -> Path:
    return write(
        root / "usr/local/Ascend/firmware/version.info", firmware_version_info(version, driver)
    )


def make_device_nodes(root: Path, count: int = 8, *, management: bool = True) -> None:
    """Regular files standing in for /dev/davinci0..N-1 (and the management nodes)."""
    dev = root / "dev"
    dev.mkdir(parents=True, exist_ok=True)
    for number in range(count):
        (dev / f"davinci{number}").touch()
    if management:
        for name in ("davinci_manager", "devmm_svm", "hisi_hdc"):
            (dev / name).touch()
    for unrelated in ("null", "tty", "loop0"):
        (dev / unrelated).touch()


def npu_smi_environ(tmp_path: Path, sample: str, **overrides: str) -> dict[str, str]:
    """An environment in which FAKE_NPU_SMI replays the formats doc's sample `sample`."""
    output = write(tmp_path / f"npu-smi-{sample}.txt", table_only(load_doc_samples()[sample]))
    return {
        "PATH": os.environ["PATH"],  # the fake's `#!/usr/bin/env python3` needs it
        "HOME": str(tmp_path / "home"),
        "NPUWATCH_FAKE_NPU_SMI_OUTPUT": str(output),
        **overrides,
    }


FAKE_NPU_SMI_COMMAND = (str(FAKE_NPU_SMI), "info")


def npu_smi_replies(tmp_path: Path, replies: dict[str, str]) -> dict[str, str]:
    """Environment entries that make FAKE_NPU_SMI answer `info -t board -i 0` and the like.

    `replies` maps the arguments after `info` (`"-t board -i 0"`) to the output to print.
    """
    folder = tmp_path / "npu-smi-replies"
    for arguments, text in replies.items():
        write(folder / ("_".join(["info", *arguments.split()]) + ".txt"), text)
    return {"NPUWATCH_FAKE_NPU_SMI_REPLIES": str(folder)}


def fake_host(
    tmp_path: Path,
    environ: dict[str, str] | None = None,
    *,
    packages: dict[str, str] | None = None,
    disk: tuple[int, int] = (100 * GIB, 60 * GIB),
) -> Host:
    """A host rooted at <tmp_path>/root, with an empty PATH (no npu-smi) unless `environ` says.

    HOME is <tmp_path>/home; packages maps distribution names to versions (default: none).
    """
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    (tmp_path / "bin").mkdir(exist_ok=True)
    base = {"PATH": str(tmp_path / "bin"), "HOME": str(tmp_path / "home")}
    installed = packages or {}
    return Host(
        environ={**base, **(environ or {})},
        root=root,
        python="/opt/venv/bin/python",
        host_name="node-7",
        package_version=installed.get,
        disk_space=lambda path: disk,
        speedups=lambda: SPEEDUPS_ON,
    )
