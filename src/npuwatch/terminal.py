"""What reaches a terminal: text from logs made visible, colours, and a progress line.

Log lines, file names and every other text npuwatch did not write itself may carry control
characters, and a terminal acts on them instead of showing them: ESC [ 2 J clears the screen,
OSC 52 writes the reader's clipboard, a carriage return or a bidi override hides text behind
other text. So human output shows them as escapes, as journalctl does (`visible`): `\\x1b`,
`\\r`, `\\x9b`, `\\u202e`. A newline stays a newline where a multi-line record is shown as lines
(`visible`) and is escaped in a one-line field such as a file name (`visible_line`); a tab stays.
Every command's standard error, and its standard output unless it prints JSON or CSV, goes
through `VisibleStream` (cli.main), which does the same for whatever a renderer did not, and
lets through only the colours of this module's Palette on a terminal that takes colours.
JSON output is left exact: JSON escapes the C0 controls itself, and the text stays byte for byte
what the log held.

Colours only when the stream is a TTY and NO_COLOR is unset (https://no-color.org); the progress
line only on a TTY, on standard error, so that piped output stays clean.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, tzinfo
from typing import Any, TextIO, cast

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
_OWN_COLOURS = re.compile(
    "|".join(
        re.escape(code)
        for code in sorted({_RESET, *_LEVEL_COLOURS.values(), _BOLD, _DIM, _HIGHLIGHT})
    )
)
"""The control sequences Palette writes, and no others."""

_ACTED_ON = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f"  # C0 but tab and newline, DEL, C1 (U+009B is a CSI)
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidi marks, embeddings, overrides, isolates
    "\u2028\u2029"  # line and paragraph separators
    "\ud800-\udfff"  # lone surrogates (bytes that were no UTF-8): no terminal can show them
)
_HIDDEN = re.compile(f"[{_ACTED_ON}]")


def visible(text: str) -> str:
    """`text` with every character a terminal would act on, or that hides other text, shown
    as an escape (`\\x1b`, `\\u202e`); newlines and tabs stay. For text from logs and files."""
    if _HIDDEN.search(text) is None:  # nearly always: one C pass, no copy
        return text
    return _HIDDEN.sub(_escape, text)


def visible_line(text: str) -> str:
    """`visible`, with newlines escaped too: for a field shown on one line (a file name, a
    message's first line), where a newline would forge a line of output."""
    # One pattern, compiled once (0.5 ms, on the start-up path grep is timed on): what
    # `visible` gives holds no other newline than the text's own.
    return visible(text).replace("\n", "\\n")


_SHORT_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\v": "\\v"}
"""As systemd's cescape() writes them (what journalctl shows); any other as `\\xNN`, `\\uNNNN`."""


def _escape(match: re.Match[str]) -> str:
    character = match.group()
    short = _SHORT_ESCAPES.get(character)
    if short is not None:
        return short
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


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
        self._stream = unescaped(stream)  # its carriage return and erase are its own
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


class VisibleStream:
    """A text stream that shows what `visible` escapes as escapes on its way to `raw`; on a
    terminal that takes colours, the colour sequences of Palette pass as they are."""

    def __init__(self, raw: TextIO) -> None:
        self.raw = raw
        self._colours = wants_colour(raw)

    def write(self, text: str) -> int:
        if _HIDDEN.search(text) is not None:
            self.raw.write(self._shown(text))
        else:
            self.raw.write(text)
        return len(text)

    def _shown(self, text: str) -> str:
        if not self._colours:
            return _HIDDEN.sub(_escape, text)
        pieces = []
        start = 0
        for colour in _OWN_COLOURS.finditer(text):
            pieces.append(_HIDDEN.sub(_escape, text[start : colour.start()]))
            pieces.append(colour.group())
            start = colour.end()
        pieces.append(_HIDDEN.sub(_escape, text[start:]))
        return "".join(pieces)

    def writelines(self, lines: Iterator[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.raw.flush()

    def isatty(self) -> bool:
        return self.raw.isatty()

    def fileno(self) -> int:
        return self.raw.fileno()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def unescaped(stream: TextIO) -> TextIO:
    """The stream under a VisibleStream (for output that must stay exact: JSON, and the
    progress line's own carriage return), or `stream` itself."""
    return stream.raw if isinstance(stream, VisibleStream) else stream


@contextmanager
def visible_output(exact_stdout: bool) -> Iterator[None]:
    """Standard error, and standard output unless `exact_stdout` (a command printing JSON or
    CSV), go through VisibleStream until the block ends."""
    saved = sys.stdout, sys.stderr
    sys.stderr = cast(TextIO, VisibleStream(sys.stderr))
    if not exact_stdout:
        sys.stdout = cast(TextIO, VisibleStream(sys.stdout))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def format_datetime(epoch_us: int | None, zone: tzinfo) -> str:
    """A short local time for reports: `2025-05-08 09:56:18.522`."""
    if epoch_us is None:
        return "-"
    # From whole seconds, so that no float rounds the microseconds (and no import of records:
    # grep prints through this module and starts without dataclasses).
    seconds, micros = divmod(epoch_us, 1_000_000)
    moment = datetime.fromtimestamp(seconds, zone).replace(microsecond=micros)
    return moment.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
