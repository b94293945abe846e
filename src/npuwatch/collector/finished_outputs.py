"""Outputs written over minutes, imported once they are finished: profiling runs and the
debugging tools' outputs alike.

A profiling run is written over minutes (the torch_npu profiler parses its raw data after the
job's last step; msprof exports when asked), a training monitor's folder grows while the job
trains, and no tool writes an end marker the agent could trust (torch_npu's `analyse.done` is
the one exception: `marked`). So an output is imported when none of its files changed for
`settle` seconds. What was imported of each is kept in a small JSON file under the agent's state
folder (`ImportedOutputs`): the signature it had (file count, bytes, newest change), and for the
debugging tools the keys of the entries already journaled, the next journal offset and the
figures of the metrics; so a restart imports nothing twice, and an output written again is
imported again. A full disk does not stop imports: the list is written when there is room.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from npuwatch.state_file import StateFile
from npuwatch.tree_walk import walk_folders

log = logging.getLogger(__name__)


class Signature(NamedTuple):
    """What an output's files look like now: equal signatures mean nothing changed."""

    files: int
    bytes: int
    newest_ns: int


def signature_of(path: Path) -> Signature | None:
    """The signature of a file or of a folder's files, None when it vanished while being
    looked at (or is neither)."""
    if not path.is_dir():
        try:
            status = path.lstat()
        except OSError:
            return None
        return Signature(1, status.st_size, status.st_mtime_ns) if path.is_file() else None
    files = size = newest = 0
    try:
        for folder, _, names in walk_folders(str(path)):
            for name in names:
                try:
                    status = os.lstat(os.path.join(folder, name))  # noqa: PTH118
                except FileNotFoundError:
                    continue
                files += 1
                size += status.st_size
                newest = max(newest, status.st_mtime_ns)
    except OSError:
        return None
    return Signature(files, size, newest)


@dataclass(frozen=True)
class Output:
    """An output found under a folder: its kind and where it is."""

    kind: str
    path: Path


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
    """The outputs imported, by path, written whole (atomically) at every import.

    `keep_gone`: an output deleted by its owner stays, marked not present (its counts stay in
    counters that never go down); otherwise it is dropped, so that the file stays small.
    `lost`: what a write the disk refused costs, for the warning. `kind`: of the outputs of a
    list written before 0.2 by the profiling importer (`runs`: path → signature)."""

    def __init__(self, path: Path, lost: str, keep_gone: bool = True, kind: str = "") -> None:
        self.path = path
        self._keep_gone = keep_gone
        self._kind = kind
        self._outputs: dict[str, OutputState] = self._load()
        self._file = StateFile(path, lost)

    def _load(self) -> dict[str, OutputState]:
        try:
            data = json.loads(self.path.read_bytes().decode("utf-8"))
            if "runs" in data:
                return {
                    name: OutputState(self._kind, Signature(*(int(part) for part in value)))
                    for name, value in data["runs"].items()
                }
            return {name: _state(value) for name, value in data["outputs"].items()}
        except FileNotFoundError:
            return {}
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            log.warning(
                "%s is unreadable (%s): the outputs found now are imported again",
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
        """Mark the outputs that no longer exist as gone (or drop them); the paths newly gone."""
        keep = {str(path) for path in present}
        gone = [name for name, s in self._outputs.items() if s.present and name not in keep]
        for name in gone:
            if self._keep_gone:
                state = self._outputs[name]
                state.present = False
                state.delivered = []  # written anew, it is a new output
            else:
                del self._outputs[name]
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


def never_marked(path: Path) -> bool:
    """No end marker: an output is finished when it settled."""
    return False


class OutputTracker:
    """Says which outputs found under the folders are finished and not yet imported: settled
    for `settle_s`, or `marked` finished by their tool."""

    def __init__(
        self,
        find: Callable[[Path], list[Output]],
        imported: ImportedOutputs,
        settle_s: float,
        signature: Callable[[Path], Signature | None] = signature_of,
        marked: Callable[[Path], bool] = never_marked,
    ) -> None:
        self._find = find
        self.imported = imported
        self._settle_s = settle_s
        self._signature = signature
        self._marked = marked
        self._seen: dict[Path, _Seen] = {}

    def ready(
        self, roots: Iterable[Path], now: float
    ) -> tuple[list[tuple[Output, Signature]], list[str]]:
        """The outputs to import now, oldest change first; and the paths of outputs that were
        deleted since the last look."""
        found: list[Output] = []
        for root in roots:
            if root.is_dir():
                found.extend(self._find(root))
        ready: list[tuple[Output, Signature]] = []
        for output in found:
            signature = self._signature(output.path)
            if signature is None or self.imported.imported(output.path, signature):
                continue
            seen = self._seen.get(output.path)
            if seen is None or seen.signature != signature:
                self._seen[output.path] = seen = _Seen(signature, now)
            if self._marked(output.path) or now - seen.since >= self._settle_s:
                ready.append((output, signature))
        present = {output.path for output in found}
        self._seen = {path: seen for path, seen in self._seen.items() if path in present}
        gone = self.imported.forget_missing(present)
        return sorted(ready, key=lambda item: item[1].newest_ns), gone

    def done(self, path: Path, state: OutputState) -> None:
        self.imported.put(path, state)
        self._seen.pop(path, None)
