"""`npuwatch parse`, `scan` and `schema`: the commands for a log tree on one machine."""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from npuwatch.cann_roots import host_log_root
from npuwatch.collector.files import line_chunks, read_chunks, year_reference_us
from npuwatch.commands.outcome import EXIT_FINDINGS, EXIT_OK, error, fail
from npuwatch.commands.rules_in_force import load_rules_or_fail
from npuwatch.parsers.stream import iter_records
from npuwatch.parsers.timestamps import LocalClock, resolve_timezone
from npuwatch.problems import EXIT_USAGE
from npuwatch.process_pool import usable_cores
from npuwatch.records import Record
from npuwatch.rules.engine import RuleEngine
from npuwatch.scan.aggregate import ScanResult
from npuwatch.scan.central import merge_summaries, read_summaries, summary_files
from npuwatch.scan.hosts import HostOnCollection
from npuwatch.scan.summary import SummaryError
from npuwatch.scan.text import render_scan
from npuwatch.scan.tree import scan_tree
from npuwatch.sinks.console import TableFormatter, to_json_line
from npuwatch.terminal import Palette, ProgressLine, wants_colour
from npuwatch.tree_walk import LinkPolicy
from npuwatch.untrusted_files import open_binary


def _clock(args: argparse.Namespace) -> LocalClock:
    try:
        return LocalClock(resolve_timezone(args.timezone))
    except ValueError as problem:
        fail(str(problem))


def run_parse(args: argparse.Namespace) -> int:
    clock = _clock(args)
    out = sys.stdout
    table = None
    if args.format == "table":
        table = TableFormatter(clock.zone, Palette(wants_colour(out)))
    if table is not None:
        out.write(table.header() + "\n")
    status = EXIT_OK
    for name in args.paths:
        if name == "-":
            blocks = iter(lambda: sys.stdin.buffer.read(1 << 20), b"")
            _print_records(iter_records(line_chunks(blocks), clock, None, args.host), table)
            continue
        path = Path(name)
        problem = _unreadable(path)
        if problem is not None:
            error(problem)
            status = EXIT_USAGE
            continue
        try:
            with open_binary(path, named=True) as handle:
                modified_us = os.fstat(handle.fileno()).st_mtime_ns // 1000
                reference_us = year_reference_us(handle, modified_us)
                records = iter_records(
                    read_chunks(handle), clock, str(path), args.host, reference_us=reference_us
                )
                _print_records(records, table)
        except BrokenPipeError:
            raise
        except OSError as failure:
            error(f"cannot read {path}: {failure.strerror or failure}")
            status = EXIT_USAGE
    out.flush()
    return status


def _print_records(records: Iterable[Record], table: TableFormatter | None) -> None:
    write = sys.stdout.write
    if table is None:
        for record in records:
            write(to_json_line(record) + "\n")
    else:
        for record in records:
            write(table.format(record) + "\n")


def run_scan(args: argparse.Namespace) -> int:
    clock = _clock(args)
    if args.summaries:
        return _scan_summaries(args, clock)
    root = scan_root(args.root)
    engine = None if args.no_rules else RuleEngine(load_rules_or_fail(args.rules))
    progress = ProgressLine(sys.stderr, "scanning")
    try:
        result = scan_tree(
            root,
            clock,
            context_lines=args.context,
            host=args.host,
            progress=progress.update,
            engine=engine,
            links=LinkPolicy(follow=args.follow_links),
            jobs=args.jobs if args.jobs is not None else usable_cores(),
        )
    except HostOnCollection as refusal:
        fail(str(refusal))
    finally:
        progress.close()
    return _report(result, clock, args.json)


def _scan_summaries(args: argparse.Namespace, clock: LocalClock) -> int:
    if args.root is not None:
        fail(f"give either a log tree ({args.root}) or --summaries, not both")
    if args.host is not None:
        fail("--host names a log tree's host; the host of a summary is the one it was made on")
    try:
        files = summary_files(args.summaries)
        result = merge_summaries(read_summaries(files), files)
    except SummaryError as problem:
        fail(str(problem))
    return _report(result, clock, args.json)


def _report(result: ScanResult, clock: LocalClock, as_json: bool) -> int:
    if as_json:
        json.dump(result.to_dict(), sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_scan(result, clock.zone, Palette(wants_colour(sys.stdout))))
        sys.stdout.write("\n")
    for problem in result.problems:
        error(problem)
    if result.problems:
        return EXIT_USAGE
    return EXIT_FINDINGS if result.error_records else EXIT_OK


def scan_root(name: str | None) -> Path:
    """The log tree named (or the default one); leaves with one line when it cannot be read."""
    if name == "":
        fail("scan was given an empty path: give a log tree, or no path for the default one")
    root = Path(name) if name is not None else default_log_root()
    link_problem = _link_problem(root)
    if link_problem is not None:
        fail(f"cannot read {root}: {link_problem}")
    if not root.exists():
        fail(
            f"log tree {root} does not exist: give the folder that holds debug/ and run/ "
            "(for example ~/ascend/log), or set ASCEND_PROCESS_LOG_PATH or ASCEND_WORK_PATH"
        )
    if not os.access(root, os.R_OK):
        fail(f"cannot read {root}: permission denied (run as the user that owns the logs)")
    return root


def run_schema(args: argparse.Namespace) -> int:
    from npuwatch.record_schema import json_schema  # noqa: PLC0415 - pydantic, only here

    json.dump(json_schema(), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return EXIT_OK


def default_log_root() -> Path:
    """Where CANN writes this environment's host logs (cann_roots.py)."""
    root = host_log_root(os.environ, Path.home())
    assert root.path is not None  # a home was given
    return root.path


def _link_problem(path: Path) -> str | None:
    """What is wrong with `path` when it is a link that leads nowhere (a loop, nothing)."""
    try:
        path.stat()
    except OSError as error:
        if path.is_symlink():
            return "a link loop" if error.errno == errno.ELOOP else "a link to nothing"
    return None


def _unreadable(path: Path) -> str | None:
    link_problem = _link_problem(path)
    if link_problem is not None:
        return f"cannot read {path}: {link_problem}"
    if not path.exists():
        return f"cannot read {path}: no such file (check the path)"
    if path.is_dir():
        return f"{path} is a folder: use 'npuwatch scan {path}' to walk a log tree"
    if not os.access(path, os.R_OK):
        return f"cannot read {path}: permission denied (run as the user that owns the logs)"
    return None
