"""Profiling runs under the configured folders: which are complete, and which are new.

A profiling run is written over minutes (the torch_npu profiler parses its raw data after the
job's last step; msprof exports when asked), so a run is imported only when it is complete:
when it carries torch_npu's `analyse.done` marker, or when none of its files has changed for
`settle` seconds. Runs already imported are remembered in a small JSON file under the agent's
state folder, with the signature (file count, bytes, newest change) they had, so a restart
imports nothing twice and a run that is written again (profiled anew into the same folder) is
imported again. A full disk does not stop imports: the list is written when there is room.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from npuwatch.profiling.msprof.layout import DONE_MARKER, TORCH_OUTPUT
from npuwatch.state_file import StateFile
from npuwatch.tree_walk import walk_folders

log = logging.getLogger(__name__)


class Signature(NamedTuple):
    """What a run's files look like now: equal signatures mean nothing changed."""

    files: int
    bytes: int
    newest_ns: int


def signature_of(run: Path) -> Signature | None:
    """The run's signature, or None when it vanished while being looked at."""
    if not run.is_dir():
        return None
    files = size = newest = 0
    try:
        for folder, _, names in walk_folders(str(run)):
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


def marked_complete(run: Path) -> bool:
    """Whether the profiler itself says the run is done: torch_npu writes `analyse.done` into
    ASCEND_PROFILER_OUTPUT once it has parsed the run (msprof writes no such marker)."""
    return (run / TORCH_OUTPUT / DONE_MARKER).is_file()


@dataclass
class _Seen:
    signature: Signature
    since: float


class ImportedRuns:
    """The runs already imported, by path, with the signature they had then."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._runs: dict[str, Signature] = self._load()
        self._file = StateFile(
            path,
            "imports again the runs imported since (their search-engine documents keep "
            "their ids; the journal holds their operators twice)",
        )

    def _load(self) -> dict[str, Signature]:
        try:
            data = json.loads(self.path.read_bytes().decode("utf-8"))
            return {run: Signature(*value) for run, value in data["runs"].items()}
        except FileNotFoundError:
            return {}
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            log.warning(
                "%s is unreadable (%s): profiling runs found now are imported again (their "
                "search-engine documents keep their ids, so nothing is duplicated there)",
                self.path,
                type(error).__name__,
            )
            return {}

    def imported(self, run: Path, signature: Signature) -> bool:
        return self._runs.get(str(run)) == signature

    def add(self, run: Path, signature: Signature) -> None:
        self._runs[str(run)] = signature
        data = {"version": 1, "runs": {name: list(value) for name, value in self._runs.items()}}
        self._file.save(json.dumps(data, indent=1).encode("utf-8"))

    def forget_missing(self, present: Iterable[Path]) -> None:
        """Drop runs that no longer exist (deleted by their owner), so the file stays small."""
        keep = {str(run) for run in present}
        gone = [name for name in self._runs if name not in keep]
        for name in gone:
            del self._runs[name]
        self._file.retry()  # a list a full disk refused: the scans are its chance to be written


class RunTracker:
    """Says which runs found under the folders are complete and not yet imported."""

    def __init__(
        self,
        find_runs: Callable[[Path], list[Path]],
        imported: ImportedRuns,
        settle_s: float,
        signature: Callable[[Path], Signature | None] = signature_of,
        marked: Callable[[Path], bool] = marked_complete,
    ) -> None:
        self._find_runs = find_runs
        self._imported = imported
        self._settle_s = settle_s
        self._signature = signature
        self._marked = marked
        self._seen: dict[Path, _Seen] = {}

    def ready(self, roots: Iterable[Path], now: float) -> list[tuple[Path, Signature]]:
        """The runs to import now, oldest change first."""
        found: list[Path] = []
        for root in roots:
            if root.is_dir():
                found.extend(self._find_runs(root))
        ready: list[tuple[Path, Signature]] = []
        for run in found:
            signature = self._signature(run)
            if signature is None or self._imported.imported(run, signature):
                continue
            seen = self._seen.get(run)
            if seen is None or seen.signature != signature:
                self._seen[run] = seen = _Seen(signature, now)
            if self._marked(run) or now - seen.since >= self._settle_s:
                ready.append((run, signature))
        present = set(found)
        self._seen = {run: seen for run, seen in self._seen.items() if run in present}
        self._imported.forget_missing(found)
        return sorted(ready, key=lambda item: item[1].newest_ns)

    def done(self, run: Path, signature: Signature) -> None:
        self._imported.add(run, signature)
        self._seen.pop(run, None)
