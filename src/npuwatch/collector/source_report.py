"""What the tailer says about its sources: data lost with deleted files, and files skipped.

Every loss is counted and logged once, and said right: the bytes a deleted file took with it are
exact while the agent held the file open (its descriptor gives the final size), a lower bound
when they come from its last known size ("at least"), and unknown when the file came and went
between two looks. A file renamed, a link loop or a folder named like a log is no loss: those
are source problems, with a reason of metrics.SourceProblemReason.
"""

from __future__ import annotations

import logging

from npuwatch.collector.tailed_file import shown_path
from npuwatch.metrics import SelfMetrics, SourceProblemReason

log = logging.getLogger("npuwatch.collector.tailer")


class SourceReport:
    """Counts and logs, for one tailer."""

    def __init__(self, metrics: SelfMetrics) -> None:
        self._metrics = metrics
        self._reported: set[tuple[str, str]] = set()

    def lost(self, path: str, unread: int | None, exact: bool = True) -> None:
        """`path` was deleted with `unread` bytes not read (None: its size was never seen;
        `exact` False: the size is the last one known, which the file may have outgrown)."""
        if unread is not None and unread <= 0:
            return
        self._metrics.files_deleted_unread.inc()
        if unread is None:
            how_much = "it was never read; its size is not known"
        else:
            self._metrics.bytes_deleted_unread.inc(unread)
            how_much = f"{'' if exact else 'at least '}{unread} bytes unread"
        log.warning("%s was deleted before it was read to the end (%s)", shown_path(path), how_much)

    def gone_while_stopped(self, paths: list[tuple[str, int]]) -> None:
        """Files followed before the agent stopped and deleted before it started again, with
        the bytes known unread at the last checkpoint: those above nothing are losses (`lost`);
        for every one, what it gained after the checkpoint is not known, and is said so, in one
        line for them all (CANN deletes a process's old files by the dozen)."""
        if not paths:
            return
        self._metrics.files_deleted_while_stopped.inc(len(paths))
        for path, unread in paths:
            self.lost(path, unread, exact=False)
        shown = ", ".join(shown_path(path) for path, _ in paths[:3])
        more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
        log.warning(
            "%d file(s) followed before the agent stopped were deleted before it started again "
            "(%s%s): what was written to them after the last checkpoint, if anything, is lost "
            "and its size is not known",
            len(paths),
            shown,
            more,
        )

    def problem(self, path: str, problem: str, reason: SourceProblemReason = "unreadable") -> None:
        """`path` is skipped; said once per path and problem."""
        if (path, problem) in self._reported:
            return
        self._reported.add((path, problem))
        self._metrics.source_problems.labels(reason).inc()
        log.warning("skipping %s: %s", shown_path(path), problem)
