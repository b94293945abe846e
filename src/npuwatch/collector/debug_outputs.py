"""Outputs of the debugging tools under the configured folders: what they are, which are
complete, and what of each was imported already.

An output is the unit the agent imports at once, and what it is depends on the tool:

- `precision`: one file msprobe / msit compare, acc_check or overflow_check wrote
  (compare_result_*.xlsx|csv|json, diff_analyze_*.json, multi_ranks_compare_merge_*.xlsx, msit
  result_*.csv, accuracy_checking_*.csv, anomaly_analyze_*.json): each is written once;
- `monitor`: a training monitor's folder, the topmost one holding statistics CSVs
  (`grad_reduced_0-19.csv` …) or an `anomaly_detected/` folder, rank folders included. It grows
  while the job trains, so it is imported again each time it settled after a change;
- `sanitizer`: one msSanitizer report (a `.log` file whose first lines carry its `======`
  markers, such as mindstudio_sanitizer_log/mssanitizer_*.log);
- `msaicerr`: one `info_<timestamp>` folder of msaicerr.

The tools write no end marker the agent could trust (msaicerr's README.txt is written first,
before the error folders), so an output is complete when none of its files changed for
`settle` seconds (collector/finished_outputs.py, which keeps what was imported of each: a
monitor folder that grew adds only its new findings, and no counter counts an output twice).
Which kind an output is, the chooser says (npuwatch.debug_tools.DEBUG_TOOLS).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from npuwatch.collector.finished_outputs import ImportedOutputs, Output, OutputTracker
from npuwatch.debug_tools import DEBUG_TOOLS
from npuwatch.tree_walk import walk_folders


def find_debug_outputs(root: Path, kinds: Iterable[str] = tuple(DEBUG_TOOLS)) -> list[Output]:
    """Every output of `kinds` at or under `root`, in path order (the chooser, DEBUG_TOOLS,
    says what each is)."""
    tools = [DEBUG_TOOLS[kind] for kind in kinds]
    whole = [tool for tool in tools if tool.shape == "folder"]
    inner = [tool for tool in tools if tool.shape == "subfolder"]
    files = [tool for tool in tools if tool.shape == "file"]
    found: list[Output] = []
    for folder, subfolders, names in walk_folders(str(root)):
        here = Path(folder)
        tool = next((tool for tool in whole if tool.recognise(here)), None)
        if tool is not None:
            found.append(Output(tool.kind, here))
            subfolders.clear()  # its rank folders and anomaly_detected/ are part of it
            continue
        for name in list(subfolders):
            tool = next((tool for tool in inner if tool.recognise(here / name)), None)
            if tool is not None:
                subfolders.remove(name)
                found.append(Output(tool.kind, here / name))
        for name in sorted(names):
            tool = next((tool for tool in files if tool.recognise(here / name)), None)
            if tool is not None:
                found.append(Output(tool.kind, here / name))
    return sorted(found, key=lambda output: str(output.path))


def output_tracker(state_file: Path, settle_s: float) -> OutputTracker:
    """The tracker of the outputs under the configured folders, what was imported of each kept
    in `state_file`."""
    imported = ImportedOutputs(
        state_file,
        "imports again the debugging-tool outputs imported since (the journal holds their "
        "findings twice, and their counters count them twice)",
    )
    return OutputTracker(find_debug_outputs, imported, settle_s)
