"""`npuwatch grep`: structured questions to the agent's journal, answered like grep.

This module is on the fast path of a command that is timed against `rg`, where most of the time
is the interpreter starting (docs/adr/0002-grep-start-up.md): what it imports at the top is the
journal's index plan and the lightest of the standard library. The rest is imported where it is
needed: the block codecs for -C and for --events (an event's context is read from the blocks),
the record schema and the parser for --json, json for --events, zoneinfo for --timezone, the
configuration (pydantic) only when no --journal is given, and the baseline archive's search
(baseline_grep) only for --baseline.
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timezone, tzinfo
from typing import TYPE_CHECKING, TextIO

from npuwatch.commands.outcome import EXIT_FINDINGS, EXIT_OK, fail
from npuwatch.journal.damage import DamageNotice
from npuwatch.journal.layout import segment_files
from npuwatch.journal.query import search
from npuwatch.journal.question import Directory, Hit, Question, say_on_stderr
from npuwatch.journal.rows import StoredRecord
from npuwatch.quantities import parse_duration
from npuwatch.terminal import Palette, visible, visible_line, wants_colour

if TYPE_CHECKING:
    from npuwatch.journal.context import ContextReader

_CANN_DATE_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2})-(\d{2}:)")
_CANN_FRACTION = re.compile(r"(:\d{2}\.\d{3})\.(\d{3})$")
"""A plog's time ends in milliseconds and microseconds apart: `09:37:31.402.500`."""


def parse_when(text: str, now_s: float, zone: tzinfo | None) -> int:
    """Epoch microseconds for "1h" (that long ago), "now", or a date and time (local time in
    `zone`, or this host's, unless it says its zone)."""
    text = text.strip()
    if text == "now":
        return int(now_s * 1_000_000)
    try:
        return int((now_s - parse_duration(text)) * 1_000_000)
    except ValueError:
        pass
    iso = _CANN_FRACTION.sub(r"\1\2", _CANN_DATE_TIME.sub(r"\1 \2", text))
    if iso.endswith(("Z", "z")):
        iso = iso[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        raise ValueError(
            f"cannot read the time {text!r}: give a duration back from now (30m, 1h, 2d) or a "
            "date and time such as 2025-09-14 09:30, 2025-09-14T09:30:00Z or a plog's "
            "2025-09-14-09:37:31.402.500"
        ) from None
    try:
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=zone) if zone is not None else moment.astimezone()
        return int(moment.timestamp() * 1_000_000)
    except (OverflowError, ValueError):  # year 1 moved by a zone before the first day
        raise ValueError(
            f"cannot read the time {text!r}: it is out of the years 1 to 9999"
        ) from None


def _names(text: str | None, upper: bool = True) -> frozenset[str]:
    if not text:
        return frozenset()
    names = (part.strip() for part in text.split(","))
    return frozenset((name.upper() if upper else name) for name in names if name)


def build_question(args: argparse.Namespace, now_s: float) -> Question:
    zone = _zone(args.timezone) if args.timezone else None
    try:
        since = parse_when(args.since, now_s, zone) if args.since else None
        until = parse_when(args.until, now_s, zone) if args.until else None
        journaled = [
            parse_when(when, now_s, zone) if when else None
            for when in (args.journaled_since, args.journaled_until)
        ]
        flags = re.IGNORECASE if args.ignore_case else 0
        text = re.escape(args.pattern) if args.pattern and args.fixed_strings else args.pattern
        pattern = re.compile(text, flags) if text else None
    except re.error as problem:
        fail(f"PATTERN is not a regular expression: {problem}")
    except ValueError as problem:
        fail(str(problem))
    return Question(
        pattern=pattern,
        since_us=since,
        until_us=until,
        journaled_since_us=journaled[0],
        journaled_until_us=journaled[1],
        levels=_names(args.level),
        # CANN modules are upper case (hccl finds HCCL); other loggers (lmdeploy,
        # torch.distributed, Toolkit) are found as they are written.
        modules=_names(args.module) | _names(args.module, upper=False),
        codes=_names(args.code),
        categories=_names(args.category, upper=False),
        device=args.device,
        host=args.host,
        pid=args.pid,
    )


def _zone(name: str) -> tzinfo:
    if name.upper() == "UTC":
        return timezone.utc
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # noqa: PLC0415 - see the docstring

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        fail(f"unknown time zone {name!r}: use an IANA name such as Asia/Shanghai")


def journal_directory(args: argparse.Namespace) -> Directory:
    if args.journal is not None:
        given = str(args.journal)
        inside = os.path.join(given, "journal")  # noqa: PTH118 - no pathlib: see the docstring
        # The agent's --state-directory keeps the journal in journal/: either folder will do.
        if not segment_files(given) and segment_files(inside):
            return inside
        return given
    from npuwatch.config import config_path_from, load_config  # noqa: PLC0415
    from npuwatch.config.loading import ConfigError  # noqa: PLC0415
    from npuwatch.default_paths import JOURNAL_FOLDER, STATE_DIRECTORY  # noqa: PLC0415

    try:
        return load_config(config_path_from(os.environ), os.environ).journal_path()
    except ConfigError:
        return str(STATE_DIRECTORY / JOURNAL_FOLDER)


def run_grep(args: argparse.Namespace) -> int:
    if args.baseline or args.archive is not None:
        from npuwatch.commands.baseline_grep import run_baseline_grep  # noqa: PLC0415

        return run_baseline_grep(args)
    question = build_question(args, time.time())
    try:
        directory = journal_directory(args)
        if not segment_files(directory):
            fail(
                f"no journal at {directory}: is the agent running (npuwatch agent)? Give the "
                "folder with --journal DIR"
            )
        # A damaged segment is read around, with one line on stderr for it; it does not
        # change the exit status, which says whether anything matched in what could be read.
        return _answer(args, question, directory, DamageNotice(say_on_stderr), sys.stdout)
    except PermissionError as error:
        fail(
            f"cannot read the journal at {error.filename}: {error.strerror or error} (run as "
            "the agent's user, root by default)"
        )
    except sqlite3.Error as error:  # no damage (that is read around): busy, say, or a bug
        fail(f"cannot read the journal at {args.journal or 'the configured folder'}: {error}")


def _answer(
    args: argparse.Namespace,
    question: Question,
    directory: Directory,
    notice: DamageNotice,
    out: TextIO,
) -> int:
    if args.events:
        from npuwatch.journal.event_search import search_events  # noqa: PLC0415 - see the docstring

        return _print_events(search_events(directory, question, notice), args, out)
    hits = search(directory, question, notice)
    if args.max_count is not None:
        hits = _first(hits, args.max_count)
    if args.count:
        count = sum(1 for _ in hits)
        out.write(f"{count}\n")
        return EXIT_OK if count else EXIT_FINDINGS
    printer = _Printer(args, question, directory, out, notice)
    try:
        for hit in hits:
            printer.print(hit)
        printer.finish()
    finally:
        printer.close()
    return EXIT_OK if printer.matches else EXIT_FINDINGS


def _first(hits: Iterator[Hit], count: int) -> Iterator[Hit]:
    for index, hit in enumerate(hits):
        if index >= count:
            return
        yield hit


def _print_events(events: Iterator[str], args: argparse.Namespace, out: TextIO) -> int:
    from npuwatch.sinks.event_text import event_line  # noqa: PLC0415 - see the docstring

    found = 0
    for document in events:
        found += 1
        if args.max_count is not None and found > args.max_count:
            found -= 1
            break
        if not args.count:
            out.write((document if args.json else event_line(document)) + "\n")
    if args.count:
        out.write(f"{found}\n")
    return EXIT_OK if found else EXIT_FINDINGS


def _offset(record: StoredRecord) -> int:
    assert record.offset is not None, "context is joined only for records with offsets"
    return record.offset


class _Printer:
    """Writes hits (and their context) as grep would, or as JSON documents."""

    def __init__(
        self,
        args: argparse.Namespace,
        question: Question,
        directory: Directory,
        out: TextIO,
        notice: DamageNotice,
    ) -> None:
        self._args = args
        self._pattern = question.pattern
        self._out = out
        self._palette = Palette(wants_colour(out))
        # The index keeps fewer fields than a block (no end offset, no flags): a JSON document
        # of an indexed hit is made from the record as its block holds it.
        self._whole = bool(args.json and question.indexed)
        needs_blocks = args.context > 0 or self._whole
        self._reader: ContextReader | None = None
        if needs_blocks:
            from npuwatch.journal.context import ContextReader  # noqa: PLC0415 - see the docstring

            self._reader = ContextReader(directory, notice=notice)
        self._file: str | None = None
        """The file of the group being printed (with -C)."""
        self._path = ""
        self._printed: StoredRecord | None = None
        """The last record of the group printed so far."""
        self._pending: list[StoredRecord] = []
        """The context after the last hit, held until the next hit shows whether it is one."""
        self.matches = 0

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()

    def finish(self) -> None:
        """Print what is held back (the context after the last hit)."""
        for record in self._pending:
            self._lines(self._path, record.original, "-", highlight=False)
        self._pending = []

    def print(self, hit: Hit) -> None:
        self.matches += 1
        if self._args.json:
            self._print_document(hit)
            return
        if self._reader is None or self._args.context <= 0:
            self._lines(hit.source.path, hit.record.original, ":", highlight=True)
            return
        before, after = self._reader.around(hit, self._args.context, self._args.context)
        record = hit.record
        if self._joins(hit, before):
            # Like grep, a group that overlaps or touches the one before continues it: each
            # record once, and a hit inside the context before it printed as a hit.
            assert self._printed is not None
            held = [r for r in self._pending if _offset(r) < _offset(record)]
            done = _offset(held[-1] if held else self._printed)
            before = held + [r for r in before if _offset(r) > done]
        else:
            self.finish()
            if self._file is not None:
                self._out.write(self._palette.dim("--") + "\n")
        self._file, self._path = hit.source.file_key, hit.source.path
        for near in before:
            self._lines(self._path, near.original, "-", highlight=False)
        self._lines(self._path, record.original, ":", highlight=True)
        self._printed, self._pending = record, after

    def _print_document(self, hit: Hit) -> None:
        import json  # noqa: PLC0415 - see the docstring

        from npuwatch.journal.documents import to_record  # noqa: PLC0415

        record = hit.record
        if self._whole and self._reader is not None:
            record = self._reader.record(hit)
        document = to_record(record, hit.source).to_document()
        self._out.write(json.dumps(document, ensure_ascii=False, separators=(",", ":")))
        self._out.write("\n")

    def _joins(self, hit: Hit, before: list[StoredRecord]) -> bool:
        """Whether the group of `hit` overlaps or touches the group printed last."""
        if self._file != hit.source.file_key or self._printed is None:
            return False
        records = [self._printed, *self._pending, *before, hit.record]
        if any(record.offset is None for record in records):
            return False
        last = self._pending[-1] if self._pending else self._printed
        first = before[0] if before else hit.record
        return _offset(first) <= _offset(last) or first.offset == last.end_offset

    def _lines(self, path: str, text: str, separator: str, highlight: bool) -> None:
        """A record's lines, each after its file's name (as grep -H), shown: what a terminal
        would act on is escaped (terminal.py), a newline in the file's name too."""
        palette = self._palette
        if highlight and self._pattern is not None and palette.enabled:
            text = _highlighted(text, self._pattern, palette)
        else:
            text = visible(text)
        if self._args.no_filename:
            self._out.write(text + "\n")
            return
        prefix = visible_line(path) + separator
        if palette.enabled:
            prefix = palette.dim(prefix)
        self._out.write("".join(f"{prefix}{line}\n" for line in text.split("\n")))


def _highlighted(text: str, pattern: re.Pattern[str], palette: Palette) -> str:
    """`text` made visible, with the pattern's matches in the highlight colour."""
    pieces = []
    start = 0
    for match in pattern.finditer(text):
        if match.end() == match.start():  # an empty match highlights nothing
            continue
        pieces.append(visible(text[start : match.start()]))
        pieces.append(palette.highlight(visible(match.group(0))))
        start = match.end()
    pieces.append(visible(text[start:]))
    return "".join(pieces)
