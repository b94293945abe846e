"""What a terminal gets that a pipe does not: colours and a progress line.

Colours only when the stream is a TTY and NO_COLOR is unset (https://no-color.org); the progress
line only on a TTY, on standard error, so that piped output stays clean.
"""

from __future__ import annotations

import os
import time
from typing import TextIO

_RESET = "\033[0m"
_LEVEL_COLOURS = {
    "ERROR": "\033[31m",
    "EXCEPTION": "\033[31m",
    "CRITICAL": "\033[1;31m",
    "WARNING": "\033[33m",
    "EVENT": "\033[36m",
    "DEBUG": "\033[2m",
    "TRACE": "\033[2m",
}
_BOLD = "\033[1m"
_DIM = "\033[2m"
_HIGHLIGHT = "\033[1;31m"


def wants_colour(stream: TextIO) -> bool:
    return stream.isatty() and "NO_COLOR" not in os.environ


class Palette:
    """Wraps text in ANSI colours, or leaves it alone when colour is off."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def level(self, level: str, text: str | None = None) -> str:
        text = level if text is None else text
        colour = _LEVEL_COLOURS.get(level)
        return f"{colour}{text}{_RESET}" if self.enabled and colour else text

    def bold(self, text: str) -> str:
        return f"{_BOLD}{text}{_RESET}" if self.enabled else text

    def dim(self, text: str) -> str:
        return f"{_DIM}{text}{_RESET}" if self.enabled else text

    def highlight(self, text: str) -> str:
        return f"{_HIGHLIGHT}{text}{_RESET}" if self.enabled else text


class ProgressLine:
    """A one-line progress display on a terminal; silent anywhere else."""

    def __init__(self, stream: TextIO, label: str, min_interval: float = 0.1) -> None:
        self._stream = stream
        self._label = label
        self._enabled = stream.isatty()
        self._min_interval = min_interval
        self._last = 0.0
        self._started = time.monotonic()

    def update(self, done: int, total: int, done_bytes: int) -> None:
        if not self._enabled:
            return
        now = time.monotonic()
        if done < total and now - self._last < self._min_interval:
            return
        self._last = now
        width = 30
        filled = width * done // total if total else width
        rate = done_bytes / max(now - self._started, 1e-6) / 1e6
        bar = "#" * filled + "-" * (width - filled)
        self._stream.write(
            f"\r{self._label} [{bar}] {done}/{total} files, {done_bytes / 1e6:.1f} MB "
            f"({rate:.1f} MB/s)"
        )
        self._stream.flush()

    def close(self) -> None:
        if self._enabled:
            self._stream.write("\r\033[K")
            self._stream.flush()
