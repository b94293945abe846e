"""Run every check of doctor against one host, in the diagnostic order.

What is found first decides how later absences are read: on a host with nothing of Ascend on
it, a missing npu-smi is a fact (absent); with the driver installed, it is a mistake (warn);
in a container with the toolkit but no /dev/davinci*, the container lacks its devices (fail).
"""

from __future__ import annotations

from npuwatch.doctor.agent_config import agent_config_check
from npuwatch.doctor.chip_details import read_chip_details
from npuwatch.doctor.container import container_evidence
from npuwatch.doctor.devices import (
    NpuEvidence,
    chip_checks,
    container_check,
    device_node_check,
    find_device_nodes,
    npu_smi_check,
    probe_npu_smi,
)
from npuwatch.doctor.environment import (
    DRIVER_VERSION_FILE,
    driver_check,
    firmware_check,
    framework_checks,
    toolkit_check,
)
from npuwatch.doctor.host import DoctorOptions, Host, is_file
from npuwatch.doctor.log_folder import log_folder_check
from npuwatch.doctor.log_settings import log_setting_checks
from npuwatch.doctor.report import Diagnosis
from npuwatch.doctor.speedups_check import speedups_check
from npuwatch.doctor.versions import find_toolkits


def diagnose(host: Host, options: DoctorOptions | None = None) -> Diagnosis:
    """Every check, grouped Environment, Devices, Logs (the order Ascend users diagnose in)."""
    options = options or DoctorOptions()
    container = container_evidence(host)
    toolkits = find_toolkits(host, options)
    npu_smi = probe_npu_smi(host, options.npu_smi, options.npu_smi_timeout_s)
    nodes = find_device_nodes(host)
    frameworks = framework_checks(host)
    evidence = NpuEvidence(
        driver=is_file(host.at(DRIVER_VERSION_FILE)),
        npu_smi=npu_smi.found,
        toolkit=any(folder.found is not None for folder in toolkits),
        torch_npu=host.package_version("torch_npu") is not None,
    )
    report = npu_smi.report
    details = read_chip_details(host, options.npu_smi, options.npu_smi_timeout_s, report)
    checks = [
        toolkit_check(toolkits),
        driver_check(host, report.driver_version if report else None),
        firmware_check(host, container, details.firmware),
        *frameworks,
        speedups_check(host),
        container_check(container),
        device_node_check(nodes, container, evidence),
        npu_smi_check(npu_smi, container, evidence),
        *chip_checks(npu_smi, details.alarms),
        *log_setting_checks(host.environ),
        log_folder_check(host, options),
        agent_config_check(host),
    ]
    return Diagnosis(host_name=host.host_name, container=container, checks=tuple(checks))
