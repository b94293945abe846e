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
from npuwatch.scan.summary import summary_text
from npuwatch.scan.tree import summarize_tree
from npuwatch.terminal import ProgressLine
from npuwatch.tree_walk import LinkPolicy


def run_summarize(args: argparse.Namespace) -> int:
    try:
        clock = LocalClock(resolve_timezone(args.timezone))
    except ValueError as problem:
        fail(str(problem))
    root = scan_root(args.root)
    engine = None if args.no_rules else RuleEngine(load_rules_or_fail(args.rules))
    progress = ProgressLine(sys.stderr, "summarizing")
    try:
        summary = summarize_tree(
            root,
            args.host or socket.gethostname(),
            clock,
            context_lines=args.context,
            progress=progress.update,
            engine=engine,
            links=LinkPolicy(follow=args.follow_links),
        )
    finally:
        progress.close()
    _write(args.output, (summary_text(summary) + "\n").encode())
    part = summary.part
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
