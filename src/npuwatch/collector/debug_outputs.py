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
`settle` seconds. What was imported of each output is kept in one JSON file under the agent's
state folder: the signature it had, the keys of the entries already journaled (a monitor folder
that grew adds only its new findings), the next journal offset, and its figures for the
metrics; so a restart imports nothing twice, and no counter counts an output twice.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from npuwatch.collector.profiling_runs import Signature, signature_of
from npuwatch.debug_tools import DEBUG_TOOLS
from npuwatch.state_file import StateFile
from npuwatch.tree_walk import walk_folders

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DebugOutput:
    kind: str
    path: Path


def find_debug_outputs(root: Path, kinds: Iterable[str] = tuple(DEBUG_TOOLS)) -> list[DebugOutput]:
    """Every output of `kinds` at or under `root`, in path order (the chooser, DEBUG_TOOLS,
    says what each is)."""
    tools = [DEBUG_TOOLS[kind] for kind in kinds]
    whole = [tool for tool in tools if tool.shape == "folder"]
    inner = [tool for tool in tools if tool.shape == "subfolder"]
    files = [tool for tool in tools if tool.shape == "file"]
    found: list[DebugOutput] = []
    for folder, subfolders, names in walk_folders(str(root)):
        here = Path(folder)
        tool = next((tool for tool in whole if tool.recognise(here)), None)
        if tool is not None:
            found.append(DebugOutput(tool.kind, here))
            subfolders.clear()  # its rank folders and anomaly_detected/ are part of it
            continue
        for name in list(subfolders):
            tool = next((tool for tool in inner if tool.recognise(here / name)), None)
            if tool is not None:
                subfolders.remove(name)
                found.append(DebugOutput(tool.kind, here / name))
        for name in sorted(names):
            tool = next((tool for tool in files if tool.recognise(here / name)), None)
            if tool is not None:
                found.append(DebugOutput(tool.kind, here / name))
    return sorted(found, key=lambda output: str(output.path))


def output_signature(path: Path) -> Signature | None:
    """The output's signature (a file's or a folder's), None when it vanished."""
    if path.is_dir():
        return signature_of(path)
    try:
        status = path.stat()
    except OSError:
        return None
    return Signature(1, status.st_size, status.st_mtime_ns)


@dataclass
class OutputState:
    """What was imported of one output."""

    kind: str
    signature: Signature
    delivered: list[str] = field(default_factory=list)
    """Keys of the entries journaled (short digests), so that an output imported again adds
    only what is new in it."""
    next_offset: int = 0
    """The journal offset of its next entry: offsets grow across imports of one output."""
    figures: dict[str, Any] = field(default_factory=dict)
    """What the metrics show of it (debug_metrics.py), as plain JSON values."""
    imported_at_s: float = 0.0
    present: bool = True
    """False once the output was deleted: its counts stay in the counters (which never go
    down), its gauges are gone."""


class ImportedOutputs:
    """The outputs imported, by path, written whole (atomically) at every import."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._outputs: dict[str, OutputState] = self._load()
        self._file = StateFile(
            path,
            "imports again the debugging-tool outputs imported since (the journal holds their "
            "findings twice, and their counters count them twice)",
        )

    def _load(self) -> dict[str, OutputState]:
        try:
            data = json.loads(self.path.read_bytes().decode("utf-8"))
            return {name: _state(value) for name, value in data["outputs"].items()}
        except FileNotFoundError:
            return {}
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            log.warning(
                "%s is unreadable (%s): debugging-tool outputs found now are imported again",
                self.path,
                type(error).__name__,
            )
            return {}

    def get(self, path: Path) -> OutputState | None:
        return self._outputs.get(str(path))

    def items(self) -> Iterator[tuple[str, OutputState]]:
        return iter(list(self._outputs.items()))

    def imported(self, path: Path, signature: Signature) -> bool:
        state = self._outputs.get(str(path))
        return state is not None and state.present and state.signature == signature

    def put(self, path: Path, state: OutputState) -> None:
        self._outputs[str(path)] = state
        self._save()

    def forget_missing(self, present: Iterable[Path]) -> list[str]:
        """Mark the outputs that no longer exist as gone; the paths newly gone."""
        keep = {str(path) for path in present}
        gone = [name for name, s in self._outputs.items() if s.present and name not in keep]
        for name in gone:
            state = self._outputs[name]
            state.present = False
            state.delivered = []  # written anew, it is a new output
        if gone:
            self._save()
        else:
            self._file.retry()  # a list a full disk refused: the scans are its chance
        return gone

    def _save(self) -> None:
        data = {
            "version": 1,
            "outputs": {name: _plain(state) for name, state in self._outputs.items()},
        }
        self._file.save(json.dumps(data, indent=1).encode("utf-8"))


def _plain(state: OutputState) -> dict[str, Any]:
    return {
        "kind": state.kind,
        "signature": list(state.signature),
        "delivered": state.delivered,
        "next_offset": state.next_offset,
        "figures": state.figures,
        "imported_at_s": state.imported_at_s,
        "present": state.present,
    }


def _state(value: dict[str, Any]) -> OutputState:
    delivered = value["delivered"]
    figures = value["figures"]
    if not isinstance(delivered, list) or not isinstance(figures, dict):
        raise TypeError("delivered or figures has the wrong type")
    return OutputState(
        kind=str(value["kind"]),
        signature=Signature(*(int(part) for part in value["signature"])),
        delivered=[str(key) for key in delivered],
        next_offset=int(value["next_offset"]),
        figures=figures,
        imported_at_s=float(value["imported_at_s"]),
        present=bool(value["present"]),
    )


@dataclass
class _Seen:
    signature: Signature
    since: float


class OutputTracker:
    """Says which outputs found under the folders are complete and not yet imported."""

    def __init__(
        self,
        find: Callable[[Path], list[DebugOutput]],
        imported: ImportedOutputs,
        settle_s: float,
        signature: Callable[[Path], Signature | None] = output_signature,
    ) -> None:
        self._find = find
        self.imported = imported
        self._settle_s = settle_s
        self._signature = signature
        self._seen: dict[Path, _Seen] = {}

    def ready(
        self, roots: Iterable[Path], now: float
    ) -> tuple[list[tuple[DebugOutput, Signature]], list[str]]:
        """The outputs to import now, oldest change first; and the paths of outputs that were
        deleted since the last look."""
        found: list[DebugOutput] = []
        for root in roots:
            if root.is_dir():
                found.extend(self._find(root))
        ready: list[tuple[DebugOutput, Signature]] = []
        for output in found:
            signature = self._signature(output.path)
            if signature is None or self.imported.imported(output.path, signature):
                continue
            seen = self._seen.get(output.path)
            if seen is None or seen.signature != signature:
                self._seen[output.path] = seen = _Seen(signature, now)
            if now - seen.since >= self._settle_s:
                ready.append((output, signature))
        present = {output.path for output in found}
        self._seen = {path: seen for path, seen in self._seen.items() if path in present}
        gone = self.imported.forget_missing(present)
        return sorted(ready, key=lambda item: item[1].newest_ns), gone

    def done(self, path: Path, state: OutputState) -> None:
        self.imported.put(path, state)
        self._seen.pop(path, None)
