"""The AI Core errors msaicerr analysed, each with its conclusion and what to do about it.

msaicerr's info_* folders are another tool's output than msSanitizer's reports: each analysed
error gets its conclusion, kernel, device/core, error code, pcs, faulting instruction and
single-operator test result, filled from README.txt where the error folder is silent; the
README.txt lines msaicerr did not analyse are listed too. summary sets them beside
the grouped sanitizer records.
"""

from __future__ import annotations

from dataclasses import dataclass

from npuwatch.debug_tools.sanitizer.advice import aicerr_advice
from npuwatch.debug_tools.sanitizer.read_msaicerr import AnalysedError, MsaicerrOutput


@dataclass(frozen=True)
class AicoreError:
    """One error msaicerr analysed, with what to do about it."""

    source: str
    conclusion: str
    kernel: str | None
    node: str | None
    device: str | None
    core: str | None
    task: str | None
    error_code: str | None
    start_pc: str | None
    current_pc: str | None
    faulting_instruction: str | None
    single_op_result: str | None
    advice: str


def aicore_errors(output: MsaicerrOutput) -> list[AicoreError]:
    """The analysed errors, then the README.txt lines that have no error folder (msaicerr
    analyses only the first error by time)."""
    analysed = [_aicore_error(error, output) for error in output.errors]
    folders = {error.folder.rsplit("/", 1)[-1] for error in output.errors}
    return analysed + [
        AicoreError(
            source=f"{output.folder}/README.txt:{entry.line}",
            conclusion="not analysed by msaicerr (a README.txt line without an error folder)",
            kernel=entry.kernel or None,
            node=entry.node or None,
            device=entry.device_id or None,
            core=entry.core_id or None,
            task=entry.task_id or None,
            error_code=entry.error_code,
            start_pc=None,
            current_pc=None,
            faulting_instruction=None,
            single_op_result=None,
            advice=aicerr_advice("", None),
        )
        for entry in output.entries
        if entry.folder not in folders
    ]


def _aicore_error(error: AnalysedError, output: MsaicerrOutput) -> AicoreError:
    name = error.folder.rsplit("/", 1)[-1]
    entry = next((entry for entry in output.entries if entry.folder == name), None)
    faulting = next((line.strip() for line in error.instructions if "*" in line[:4]), None)
    return AicoreError(
        source=error.folder,
        conclusion=error.conclusion,
        kernel=error.kernel_name or (entry.kernel if entry else None),
        node=error.basic.get("node name") or (entry.node if entry else None),
        device=error.device_id or (entry.device_id if entry else None),
        core=error.core_id or (entry.core_id if entry else None),
        task=error.basic.get("task id") or (entry.task_id if entry else None),
        error_code=error.error_code or (entry.error_code if entry else None),
        start_pc=error.start_pc,
        current_pc=error.current_pc,
        faulting_instruction=faulting,
        single_op_result=error.single_op_result,
        advice=aicerr_advice(error.conclusion, error.single_op_result),
    )
