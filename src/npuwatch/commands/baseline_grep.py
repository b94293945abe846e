"""`npuwatch grep --baseline`: search the operator tables of the baseline archive, like grep.

grep_run hands over to this module, imported only when --baseline (or --archive) is given, so
the journal's fast path never loads it. No pandas: the csv module reads the archive.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

from npuwatch.commands.outcome import EXIT_FINDINGS, EXIT_OK, error, fail
from npuwatch.profiling.baseline.archive import Archive, default_archive
from npuwatch.profiling.baseline.search import search_archive

_JOURNAL_ONLY = (
    ("--since", "since"),
    ("--until", "until"),
    ("--level", "level"),
    ("--module", "module"),
    ("--code", "code"),
    ("--category", "category"),
    ("--device", "device"),
    ("--host", "host"),
    ("--pid", "pid"),
    ("--events", "events"),
    ("--context", "context"),
    ("--journal", "journal"),
    ("--timezone", "timezone"),
)
"""Options of `grep` that ask the journal, and mean nothing to the archive."""


def run_baseline_grep(args: argparse.Namespace) -> int:
    if not args.baseline:
        fail("--archive DIR goes with --baseline: npuwatch grep --baseline PATTERN --archive DIR")
    for option, name in _JOURNAL_ONLY:
        if getattr(args, name, None):
            fail(f"{option} searches the journal, not the baseline archive: leave it out")
    try:
        text = re.escape(args.pattern) if args.fixed_strings else args.pattern
        pattern = re.compile(text, re.IGNORECASE if args.ignore_case else 0)
    except re.error as problem:
        fail(f"PATTERN is not a regular expression: {problem}")
    # grep.py keeps --archive a string: pathlib is not loaded on the journal's fast path.
    root = Path(args.archive) if args.archive is not None else default_archive(os.environ)
    archive = Archive(root)
    if not archive.baselines():
        fail(
            f"no baselines in {archive.folder}: store one with `npuwatch baseline add`, or "
            "give the archive with --archive DIR"
        )
    out = sys.stdout
    found = 0
    for match in search_archive(archive, pattern if args.pattern else None, error):
        if args.max_count is not None and found >= args.max_count:
            break
        found += 1
        if args.count:
            continue
        if args.json:
            out.write(json.dumps(match.document(), ensure_ascii=False, separators=(",", ":")))
            out.write("\n")
        else:
            out.write(match.line(with_name=not args.no_filename) + "\n")
    if args.count:
        out.write(f"{found}\n")
    return EXIT_OK if found else EXIT_FINDINGS
