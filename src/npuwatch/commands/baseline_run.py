"""`npuwatch baseline add|list|compare`: keep operator tables of profiles, and gate on them."""

from __future__ import annotations

import argparse
import math
import os
import socket
import sys
from datetime import date, datetime, timezone
from pathlib import Path

from npuwatch import __version__
from npuwatch.commands.outcome import EXIT_FINDINGS, EXIT_OK, error, fail
from npuwatch.commands.profile_input import (
    is_opprof_input,
    read_opprof_folder,
    read_profile_folder,
)
from npuwatch.profiling.baseline.archive import (
    LATEST,
    Archive,
    BaselineExistsError,
    UnknownBaselineError,
    default_archive,
)
from npuwatch.profiling.baseline.compare import compare
from npuwatch.profiling.baseline.names import BaselineName
from npuwatch.profiling.baseline.opprof_figures import compare_figures
from npuwatch.profiling.baseline.report import (
    DEFAULT_TOP,
    CompareReport,
    as_csv,
    as_json,
    as_text,
    list_document,
    list_text,
)
from npuwatch.profiling.baseline.rules import Rules, parse_figure_threshold, parse_threshold
from npuwatch.profiling.baseline.snapshot import (
    Snapshot,
    opprof_snapshot,
    profile_snapshot,
    read_snapshot,
    stored_files,
    stored_metadata,
)
from npuwatch.terminal import Palette, wants_colour

_WARNINGS_SHOWN = 5


def run_add(args: argparse.Namespace) -> int:
    try:
        name = BaselineName.of(args.date or date.today().isoformat(), args.model, args.scenario)
    except ValueError as problem:
        fail(str(problem))
    snapshot = _profile(args.prof_dir)
    archive = Archive(_archive_root(args))
    metadata = {
        **stored_metadata(snapshot),
        "host": socket.gethostname(),
        "created_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "npuwatch_version": __version__,
    }
    try:
        path = archive.store(name, stored_files(snapshot), metadata, force=args.force)
    except BaselineExistsError as problem:
        fail(str(problem))
    except OSError as failure:
        fail(
            f"cannot write the archive {archive.root}: {failure.strerror or failure}; "
            "give a folder you may write to with --archive DIR"
        )
    if snapshot.ranks is None:  # msOpProf: launches of operators, no ranks
        launches = snapshot.launch_count
        scope = f"{launches} launch{'es' if launches != 1 else ''}"
    else:
        scope = f"{snapshot.ranks} rank{'s' if snapshot.ranks != 1 else ''}"
    sys.stdout.write(
        f"stored baseline {name.folder}: {len(snapshot.table)} operators, {scope}, "
        f"{snapshot.total_us / 1000:.1f} ms of operator time\n  {path}\n"
    )
    return EXIT_OK


def run_list(args: argparse.Namespace) -> int:
    archive = Archive(_archive_root(args))
    infos = archive.baselines()
    for info in infos:
        if info.problem:
            error(f"warning: {info.problem}")
    if args.json:
        import json  # noqa: PLC0415 - only --json needs it

        document = list_document(str(archive.root), infos)
        sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    elif infos:
        sys.stdout.write(list_text(infos))
    else:
        sys.stdout.write(
            f"no baselines in {archive.folder}; store one with "
            "`npuwatch baseline add PROF_DIR --model M --scenario S`\n"
        )
    return EXIT_OK


def run_compare(args: argparse.Namespace) -> int:
    rules = _rules(args)
    if args.against != LATEST and (args.model or args.scenario):
        fail("--model and --scenario choose among baselines with --against latest only")
    archive = Archive(_archive_root(args))
    try:
        info = archive.resolve(args.against, model=args.model, scenario=args.scenario)
        baseline = read_snapshot(info)
    except (UnknownBaselineError, ValueError) as problem:
        fail(str(problem))
    if info.problem:
        error(f"warning: {info.problem}; the total is compared over the whole profile")
    current = _profile(args.prof_dir)
    figures = compare_figures(
        baseline.opprof_figures, current.opprof_figures, rules.figure_threshold_pp
    )
    report = CompareReport(compare(baseline, current, rules), info, baseline, current, figures)
    out = sys.stdout
    if args.json:
        out.write(as_json(report, args.top))
    elif args.csv:
        out.write(as_csv(report.comparison, args.top, figures))
    else:
        top = DEFAULT_TOP if args.top is None else args.top
        out.write(as_text(report, Palette(wants_colour(out)), top))
    return EXIT_FINDINGS if report.regressed else EXIT_OK


def _rules(args: argparse.Namespace) -> Rules:
    try:
        threshold = parse_threshold(args.threshold)
        figure_threshold = parse_figure_threshold(args.figure_threshold)
    except ValueError as problem:
        fail(str(problem))
    if not (math.isfinite(args.min_time_us) and args.min_time_us >= 0):
        fail(f"--min-time-us {args.min_time_us:g}: give 0 or more microseconds, such as 100")
    if args.top is not None and args.top < 0:
        fail(f"--top {args.top}: give a number of rows, or 0 for all")
    return Rules(
        threshold_pct=threshold,
        min_time_us=args.min_time_us,
        by=args.by,
        figure_threshold_pp=figure_threshold,
    )


def _archive_root(args: argparse.Namespace) -> Path:
    root: Path = args.archive if args.archive is not None else default_archive(os.environ)
    if root.exists() and not root.is_dir():
        fail(f"--archive {root}: not a folder; give the archive's folder (it holds baselines/)")
    return root


def _profile(path: Path) -> Snapshot:
    """The snapshot of the profile at `path`, or a one-line error and exit 2."""
    if is_opprof_input(path):
        return _opprof(path)
    runs = read_profile_folder(path)
    problems = [problem for run in runs for problem in run.problems]
    _warn(problems, path)
    snapshot = profile_snapshot(runs, path.resolve())
    if snapshot.table.empty:
        fail(
            f"{path}: no operator times (kernel_details.csv, op_summary or op_statistic); "
            "export them first (msprof --export=on --output=PROF_DIR)"
        )
    return snapshot


def _opprof(path: Path) -> Snapshot:
    """The snapshot of msOpProf output (OPPROF_*): Task Duration per operator launch."""
    runs = read_opprof_folder(path)
    _warn([problem for run in runs for problem in run.problems], path)
    snapshot = opprof_snapshot(runs, path.resolve())
    if snapshot.table.empty:
        fail(
            f"{path}: no launch with a Task Duration (OpBasicInfo.csv); a simulator run has "
            "none: profile on the board (msprof op) to keep a baseline"
        )
    return snapshot


def _warn(problems: list[str], path: Path) -> None:
    """The first problems met while reading, as warnings on stderr (the rest counted)."""
    for problem in problems[:_WARNINGS_SHOWN]:
        error(f"warning: {problem}")
    if len(problems) > _WARNINGS_SHOWN:
        error(f"warning: {len(problems) - _WARNINGS_SHOWN} more problems reading {path}")
