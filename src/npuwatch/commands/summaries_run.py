"""`npuwatch summarize`: one host's log tree into a host summary, for `scan --summaries`."""

from __future__ import annotations

import argparse
import socket
import sys
from pathlib import Path

from npuwatch.commands.offline_run import scan_root
from npuwatch.commands.outcome import EXIT_OK, error, fail
from npuwatch.commands.rules_in_force import load_rules_or_fail
from npuwatch.durable_files import write_atomically
from npuwatch.parsers.timestamps import LocalClock, resolve_timezone
from npuwatch.problems import EXIT_USAGE
from npuwatch.rules.engine import RuleEngine
from npuwatch.scan.aggregate import ScanResult
from npuwatch.scan.host_part import HostPart, read_unit
from npuwatch.scan.summary import HostSummary, summary_text
from npuwatch.scan.units import plan_scan
from npuwatch.terminal import ProgressLine
from npuwatch.tree_walk import LinkPolicy


def run_summarize(args: argparse.Namespace) -> int:
    try:
        clock = LocalClock(resolve_timezone(args.timezone))
    except ValueError as problem:
        fail(str(problem))
    root = scan_root(args.root)
    host = args.host or socket.gethostname()
    # The tree is this host's, whatever its folders are named (a host's tree of folders of its
    # own naming would look like a collection to scan).
    plan = plan_scan(root, host, LinkPolicy(follow=args.follow_links), one_host=True)
    engine = None if args.no_rules else RuleEngine(load_rules_or_fail(args.rules))
    progress = ProgressLine(sys.stderr, "summarizing")
    files = read = 0

    def file_done(size: int) -> None:
        nonlocal files, read
        files += 1
        read += size
        progress.update(files, plan.file_count, read)

    try:
        # One unit: every file of a single tree is the named host's.
        parts = [
            read_unit(unit, clock, root, args.context, engine, file_done) for unit in plan.units
        ]
    finally:
        progress.close()
    part = parts[0] if parts else HostPart(host, ScanResult(str(root)), rules_applied=bool(engine))
    part.listing_problems = plan.problems
    text = summary_text(HostSummary(str(root), host, part, args.context)) + "\n"
    _write(args.output, text.encode())
    problems = part.listing_problems + part.result.problems
    for said in problems:
        error(said)
    return EXIT_USAGE if problems else EXIT_OK


def _write(output: str, data: bytes) -> None:
    if output == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    path = Path(output)
    if path.is_dir():
        fail(f"{path} is a folder: give the summary's file name (for example {path}/HOST.json)")
    try:
        write_atomically(path, data)
    except OSError as problem:
        fail(f"cannot write {path}: {problem.strerror or problem}")
