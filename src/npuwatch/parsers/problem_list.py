"""The problems met while reading one file, as `file:line: what`, listed up to a limit.

Every parser that never raises on a damaged file (the profiling tables, the debugging-tools
readers) reports what it could not read this way; it lives apart from any one format so that
they all share it without importing each other.
"""

from __future__ import annotations

MAX_PROBLEMS_PER_FILE = 20
"""Problems listed one by one for a file; the rest are counted in one last line."""


class ProblemList:
    """The problems of one file (`file:line: what`), listed up to a limit and counted beyond."""

    def __init__(self, source: str) -> None:
        self._source = source
        self._lines: list[str] = []
        self._more = 0

    def add(self, line: int, message: str) -> None:
        if len(self._lines) < MAX_PROBLEMS_PER_FILE:
            self._lines.append(f"{self._source}:{line}: {message}")
        else:
            self._more += 1

    def finish(self) -> list[str]:
        if self._more:
            return [*self._lines, f"{self._source}: {self._more} more problems not listed"]
        return list(self._lines)
