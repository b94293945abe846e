"""Ascend's debugging tools, read and summarised: one package per tool a user names.

- `precision/`: msprobe / ptdbg / msit precision compare, the overflow check, the API accuracy
  checker (`npuwatch precision summary`);
- `monitor/`: msprobe's training monitor (`npuwatch monitor summary`);
- `sanitizer/`: msSanitizer reports and msaicerr outputs (`npuwatch sanitizer summary`);
- this module: the one chooser, `DEBUG_TOOLS`: for each kind of output, how it is recognised,
  how it is digested and which metric families its figures feed. Nothing else asks which tool
  an output is;
- what they share: `table_files` (the rows of a .csv or .xlsx with their numbers),
  `cell_values` (placeholder cells, numbers, texts, verdicts), `findings` (an output's findings
  as journal entries and the metrics' figures; `npuwatch.parsers.debug_entries` reads those
  entries back as records, as the journal and the sinks do).

msOpProf, a profiler, is under `npuwatch.profiling.opprof`. The readers (`*/read*`) are pure
functions of a path's bytes, like `npuwatch.parsers`: they never raise on a damaged file, and
say what they could not read as problems that name the file and the row or line
(npuwatch.parsers.problem_list). pandas and python-calamine (.xlsx) are imported by the
readers that use them, never with these packages.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from npuwatch.debug_tools.findings import OutputDigest

Reading = Literal["sum", "present", "latest"]


@dataclass(frozen=True)
class Family:
    """One metric family made of the figures of the imported outputs (see
    sinks/prometheus/debug_metrics.py for how figures become values).

    `reading` says how: "sum", a counter over every output ever imported (`figure` maps one
    label value to a count, or holds rows of label values ending with a count); "present", a
    gauge of 1 per row of label values of the outputs still present; "latest", a gauge per rank
    of the rank's most recently imported output still present (`figure` holds rows `[rank, …]`,
    the value is the row's `column`, a missing value shows no sample).
    """

    name: str
    help: str
    labels: tuple[str, ...]
    figure: str
    reading: Reading
    column: int = 0


@dataclass(frozen=True)
class DebugTool:
    """One kind of output of a debugging tool."""

    kind: str
    """The output's kind, as the importer's state file and the metrics' `kind` label say it."""
    shape: Literal["folder", "subfolder", "file"]
    """What is recognised: a folder walked (its subfolders are part of it), a subfolder of a
    folder walked, or a file."""
    recognises: str
    """`module:function(path) -> bool`, a light module (the agent's rescan imports it)."""
    digests: str
    """`module:function(path) -> OutputDigest` (pandas: run in the agent's child process)."""
    families: tuple[Family, ...]

    def recognise(self, path: Path) -> bool:
        return bool(_function(self.recognises)(path))

    def digest(self, path: Path) -> OutputDigest:
        return _function(self.digests)(path)  # type: ignore[no-any-return]


def _function(reference: str) -> Callable[..., Any]:
    module, name = reference.split(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


_FINDINGS = "npuwatch.debug_tools.findings"
_ERRORS = Family(
    "ascend_sanitizer_errors",
    "Errors msSanitizer reported (illegal_read, memory_leak, raw_hazard ...) and AI Core "
    "errors msaicerr analysed (aicore_error), by kind.",
    ("kind",),
    figure="errors",
    reading="sum",
)
_RANK_LATEST = "the rank's latest monitor output"

PRECISION = DebugTool(
    "precision",
    "file",
    "npuwatch.debug_tools.precision.files:is_precision_file",
    f"{_FINDINGS}:digest_precision",
    (
        Family(
            "ascend_precision_first_failure_info",
            "The first operator a precision compare (msprobe, msit) found beyond tolerance, "
            "one per compare file still present (value 1).",
            ("rank", "operator", "layer", "source"),
            figure="first_failures",
            reading="present",
        ),
        Family(
            "ascend_precision_overflow_nodes",
            "First Inf/NaN nodes msprobe overflow_check found, by rank.",
            ("rank",),
            figure="overflow_nodes",
            reading="sum",
        ),
    ),
)
MONITOR = DebugTool(
    "monitor",
    "folder",
    "npuwatch.debug_tools.monitor.read:is_monitor_output",
    f"{_FINDINGS}:digest_monitor",
    (
        Family(
            "ascend_monitor_anomalies",
            "Anomaly alerts of msprobe's training monitor (AnomalyTurbulence, AnomalyNan), by "
            "monitored data type and statistic, rank and anomaly rule.",
            ("metric", "rank", "anomaly"),
            figure="anomalies",
            reading="sum",
        ),
        Family(
            "ascend_monitor_grad_norm",
            "Global gradient norm at the last monitored step of the rank (sqrt of the sum of "
            "the squared per-parameter norms of grad_reduced, else grad_unreduced).",
            ("rank",),
            figure="ranks",
            reading="latest",
            column=1,
        ),
        Family(
            "ascend_monitor_nan_values",
            f"Monitor statistics rows holding NaN or inf in {_RANK_LATEST}.",
            ("rank",),
            figure="ranks",
            reading="latest",
            column=2,
        ),
        Family(
            "ascend_monitor_last_step",
            f"The last training step {_RANK_LATEST} has statistics of.",
            ("rank",),
            figure="ranks",
            reading="latest",
            column=3,
        ),
    ),
)
SANITIZER = DebugTool(
    "sanitizer",
    "file",
    "npuwatch.debug_tools.sanitizer.read:is_report_file",
    f"{_FINDINGS}:digest_sanitizer",
    (_ERRORS,),
)
MSAICERR = DebugTool(
    "msaicerr",
    "subfolder",
    "npuwatch.debug_tools.sanitizer.read_msaicerr:is_msaicerr_output",
    f"{_FINDINGS}:digest_msaicerr",
    (_ERRORS,),
)

DEBUG_TOOLS: dict[str, DebugTool] = {t.kind: t for t in (PRECISION, MONITOR, SANITIZER, MSAICERR)}
"""Every kind of output, by kind, in the order an output is recognised."""

FAMILIES: tuple[Family, ...] = tuple(
    dict.fromkeys(family for tool in DEBUG_TOOLS.values() for family in tool.families)
)
"""Every metric family, once (msSanitizer and msaicerr share theirs), in the tools' order."""


def debug_tool(kind: str) -> DebugTool:
    """The tool of `kind`; ValueError for a kind npuwatch does not know (a state file from a
    later version)."""
    try:
        return DEBUG_TOOLS[kind]
    except KeyError:
        raise ValueError(f"unknown kind of output {kind!r}") from None


def digest_output(kind: str, path: Path) -> OutputDigest:
    """The digest of the output of `kind` at `path` (pandas for most kinds)."""
    return debug_tool(kind).digest(path)
