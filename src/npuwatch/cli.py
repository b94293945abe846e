"""The `npuwatch` command: arguments in, library calls out, exit codes back.

Exit codes follow the tools operators already use: 0 all well, 1 findings (errors in the logs),
2 a usage or input error. Every error is one line on standard error that says what to do.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NoReturn

from npuwatch import __version__
from npuwatch.analysis.scan_text import render_scan
from npuwatch.analysis.scan_tree import scan_tree
from npuwatch.collector.files import line_chunks, read_chunks
from npuwatch.gc_tuning import tune_garbage_collector
from npuwatch.parsers import LocalClock, iter_records, resolve_timezone
from npuwatch.records import Record, json_schema
from npuwatch.sinks.console import TableFormatter, to_json_line
from npuwatch.terminal import Palette, ProgressLine, wants_colour

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2

_EXAMPLES_PARSE = """\
examples:
  npuwatch parse ~/ascend/log/debug/plog/plog-3813_20250110175352846.log
  npuwatch parse --format table run/plog/*.log
  grep -h HCCL train.out | npuwatch parse - --timezone Asia/Shanghai | jq -r .error.code

JSON lines use nested ECS objects: .log.level, .log.logger, .process.pid, .error.code,
.event.original, .ascend.kind ... (see `npuwatch schema`).
"""

_EXAMPLES_SCAN = """\
examples:
  npuwatch scan                      # $ASCEND_PROCESS_LOG_PATH, else ~/ascend/log
  npuwatch scan /data/job42/ascend/log
  npuwatch scan ./asys_output --json | jq '.error_codes[] | {code, count, first}'

exit status: 0 no error records, 1 error records found, 2 bad usage or unreadable input.
"""


def main(argv: Sequence[str] | None = None) -> int:
    tune_garbage_collector()
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        result: int = args.handler(args)
    except BrokenPipeError:
        # `npuwatch parse ... | head`: the reader went away; that is not an error.
        _silence_stdout()
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
    return result


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="npuwatch",
        description="Log and telemetry pipeline for Huawei Ascend NPU clusters: parse CANN "
        "logs (plog, device logs, console error blocks) into structured records and summarise "
        "what went wrong.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"npuwatch {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)

    parse = commands.add_parser(
        "parse",
        help="parse log files into records (JSON lines or a table)",
        description="Parse CANN log files into structured records, one per log event "
        "(multi-line records are kept whole).",
        epilog=_EXAMPLES_PARSE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parse.add_argument("paths", nargs="+", metavar="PATH", help="log file, or - for stdin")
    parse.add_argument(
        "--format", choices=("jsonl", "table"), default="jsonl", help="output (default: jsonl)"
    )
    _add_common(parse)
    parse.set_defaults(handler=_run_parse)

    scan = commands.add_parser(
        "scan",
        help="summarise a whole log tree after a failure",
        description="Walk a CANN log tree, parse every file, and report counts by level, "
        "module and log kind, every error code with where and when it was seen, and the first "
        "ERROR of each process with the lines before it.",
        epilog=_EXAMPLES_SCAN,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    scan.add_argument(
        "root",
        nargs="?",
        metavar="DIR",
        help="log tree or file (default: $ASCEND_PROCESS_LOG_PATH, else ~/ascend/log)",
    )
    scan.add_argument("--json", action="store_true", help="print one JSON document")
    scan.add_argument(
        "--context",
        type=_non_negative,
        default=50,
        metavar="N",
        help="lines shown before each process's first ERROR (default: 50)",
    )
    _add_common(scan)
    scan.set_defaults(handler=_run_scan)

    schema = commands.add_parser(
        "schema",
        help="print the JSON Schema of a record",
        description="Print the JSON Schema of the records npuwatch writes (ECS field names).",
    )
    schema.set_defaults(handler=_run_schema)
    return parser


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timezone",
        metavar="TZ",
        help="zone of the times in the logs, which CANN writes without one "
        "(IANA name such as Asia/Shanghai; default: this host's zone)",
    )
    parser.add_argument("--host", metavar="NAME", help="host.name to put on every record")


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def _clock(args: argparse.Namespace) -> LocalClock:
    try:
        return LocalClock(resolve_timezone(args.timezone))
    except ValueError as error:
        _fail(str(error))


def _run_parse(args: argparse.Namespace) -> int:
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
            _error(problem)
            status = EXIT_USAGE
            continue
        try:
            modified_us = path.stat().st_mtime_ns // 1000
            records = iter_records(
                read_chunks(path), clock, str(path), args.host, reference_us=modified_us
            )
            _print_records(records, table)
        except BrokenPipeError:
            raise
        except OSError as error:
            _error(f"cannot read {path}: {error.strerror or error}")
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


def _run_scan(args: argparse.Namespace) -> int:
    clock = _clock(args)
    root = Path(args.root) if args.root else default_log_root()
    if not root.exists():
        _fail(
            f"log tree {root} does not exist: give the folder that holds debug/ and run/ "
            "(for example ~/ascend/log), or set ASCEND_PROCESS_LOG_PATH"
        )
    if not os.access(root, os.R_OK):
        _fail(f"cannot read {root}: permission denied (run as the user that owns the logs)")
    progress = ProgressLine(sys.stderr, "scanning")
    try:
        result = scan_tree(
            root, clock, context_lines=args.context, host=args.host, progress=progress.update
        )
    finally:
        progress.close()
    if args.json:
        json.dump(result.to_dict(), sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_scan(result, clock.zone, Palette(wants_colour(sys.stdout))))
        sys.stdout.write("\n")
    for problem in result.problems:
        _error(problem)
    if result.problems:
        return EXIT_USAGE
    return EXIT_FINDINGS if result.error_records else EXIT_OK


def _run_schema(args: argparse.Namespace) -> int:
    json.dump(json_schema(), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return EXIT_OK


def default_log_root() -> Path:
    """Where CANN writes host logs: $ASCEND_PROCESS_LOG_PATH, else $ASCEND_WORK_PATH/log,
    else ~/ascend/log (formats doc §5.1)."""
    explicit = os.environ.get("ASCEND_PROCESS_LOG_PATH")
    if explicit:
        return Path(explicit)
    work = os.environ.get("ASCEND_WORK_PATH")
    if work:
        return Path(work) / "log"
    return Path.home() / "ascend" / "log"


def _unreadable(path: Path) -> str | None:
    if not path.exists():
        return f"cannot read {path}: no such file (check the path)"
    if path.is_dir():
        return f"{path} is a folder: use 'npuwatch scan {path}' to walk a log tree"
    if not os.access(path, os.R_OK):
        return f"cannot read {path}: permission denied (run as the user that owns the logs)"
    return None


def _error(message: str) -> None:
    sys.stderr.write(f"npuwatch: {message}\n")


def _fail(message: str) -> NoReturn:
    _error(message)
    raise SystemExit(EXIT_USAGE)


def _silence_stdout() -> None:
    # Point stdout at /dev/null so that the interpreter's final flush does not fail again.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
