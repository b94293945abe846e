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
from typing import Any, NoReturn

from npuwatch import __version__
from npuwatch.analysis.scan_text import render_scan
from npuwatch.analysis.scan_tree import scan_tree
from npuwatch.collector.files import line_chunks, read_chunks
from npuwatch.gc_tuning import tune_garbage_collector
from npuwatch.parsers import LocalClock, iter_records, resolve_timezone
from npuwatch.records import Record, json_schema
from npuwatch.rules.engine import RuleEngine
from npuwatch.rules.examples import run_examples
from npuwatch.rules.faultdiag import convert_faultdiag
from npuwatch.rules.loader import RuleLoadError, RuleSet, default_locations, load_rules
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

_EXAMPLES_RULES = """\
examples:
  npuwatch rules list
  npuwatch rules check /etc/npuwatch/rules.d/site.yaml
  npuwatch rules test                 # every example of every configured rule
  npuwatch rules import-faultdiag kg-config.json -o /etc/npuwatch/rules.d/faultdiag.yaml

A rule: id, title, when (a condition such as `error.code == EI0002 or log.level == ERROR and
message ~ /timeout/i`), severity, layer, category, advice, and examples that must and must not
match. A pack may `disable:` rules of other packs by id; a rule with an existing id replaces it.
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
    _add_rules_option(scan)
    scan.add_argument("--no-rules", action="store_true", help="only the summary, no findings")
    scan.add_argument(
        "--context",
        type=_non_negative,
        default=50,
        metavar="N",
        help="lines shown before each process's first ERROR (default: 50)",
    )
    _add_common(scan)
    scan.set_defaults(handler=_run_scan)

    _add_rules_commands(commands)

    schema = commands.add_parser(
        "schema",
        help="print the JSON Schema of a record",
        description="Print the JSON Schema of the records npuwatch writes (ECS field names).",
    )
    schema.set_defaults(handler=_run_schema)
    return parser


def _add_rules_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rules",
        action="append",
        type=Path,
        default=[],
        metavar="PATH",
        help="more rule packs (a folder of *.yaml or one file), after the defaults and "
        "/etc/npuwatch/rules.d; may be given several times",
    )


def _add_rules_commands(commands: Any) -> None:
    rules = commands.add_parser(
        "rules",
        help="list, check and test rule packs; import a FaultDiag knowledge base",
        description="Rules turn records into events with a severity and advice. Packs are YAML "
        "files: the defaults shipped with npuwatch, then /etc/npuwatch/rules.d, then --rules.",
        epilog=_EXAMPLES_RULES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = rules.add_subparsers(title="actions", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="rule ids, severities and titles")
    _add_rules_option(listing)
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(handler=_run_rules_list)
    for name, handler, text in (
        ("check", _run_rules_check, "validate packs (exit 1 on any problem)"),
        ("test", _run_rules_test, "run every rule's examples (exit 1 on any failure)"),
    ):
        action = actions.add_parser(
            name,
            help=text,
            description=f"{text[0].upper()}{text[1:]}. Without PATH: every configured pack.",
        )
        action.add_argument(
            "paths", nargs="*", type=Path, metavar="PATH", help="pack files or folders"
        )
        action.set_defaults(handler=handler)
    importer = actions.add_parser(
        "import-faultdiag",
        help="convert an Ascend FaultDiag kg-config.json into a rule pack",
        description="Convert MindCluster Ascend FaultDiag's knowledge base (kg-config.json, or a "
        "custom entity file) into an npuwatch rule pack.",
    )
    importer.add_argument("source", type=Path, metavar="FILE")
    importer.add_argument("-o", "--output", type=Path, required=True, metavar="PACK.yaml")
    importer.set_defaults(handler=_run_rules_import)


def _load_rules(extra: Sequence[Path]) -> RuleSet:
    for location in extra:
        if not location.exists():
            _fail(f"rule pack {location} does not exist: give a folder of *.yaml files or a file")
    try:
        return load_rules(default_locations(extra))
    except RuleLoadError as error:
        for problem in error.problems:
            _error(str(problem))
        _fail("the rules have errors (see above): fix them or leave out --rules")


def _run_rules_list(args: argparse.Namespace) -> int:
    ruleset = _load_rules(args.rules)
    if args.json:
        json.dump(
            [
                {
                    "id": r.id,
                    "severity": r.spec.severity,
                    "layer": r.spec.layer,
                    "category": r.spec.category,
                    "title": r.spec.title,
                    "pack": r.pack,
                    "origin": r.origin,
                }
                for r in ruleset.rules
            ],
            sys.stdout,
            indent=2,
        )
        sys.stdout.write("\n")
        return EXIT_OK
    palette = Palette(wants_colour(sys.stdout))
    for rule in ruleset.rules:
        severity = rule.spec.severity.upper()
        sys.stdout.write(
            f"{rule.id:42} {palette.level(severity, f'{severity:8}')} {rule.spec.title}\n"
        )
    sys.stdout.write(f"{len(ruleset.rules)} rules from {len(ruleset.files)} packs\n")
    return EXIT_OK


def _rule_locations(paths: Sequence[Path]) -> list[Path]:
    for path in paths:
        if not path.exists():
            _fail(f"rule pack {path} does not exist")
    return list(paths) if paths else default_locations()


def _load_for_checking(paths: Sequence[Path]) -> RuleSet | None:
    """The rule set at `paths` (every configured pack when none), or None after printing its
    problems."""
    try:
        return load_rules(_rule_locations(paths))
    except RuleLoadError as error:
        for problem in error.problems:
            sys.stdout.write(f"{problem}\n")
        sys.stdout.write(f"{len(error.problems)} problems\n")
        return None


def _run_rules_check(args: argparse.Namespace) -> int:
    ruleset = _load_for_checking(args.paths)
    if ruleset is None:
        return EXIT_FINDINGS
    unindexed = [rule for rule in ruleset.rules if rule.keys is None]
    for rule in unindexed:
        sys.stdout.write(
            f"{rule.origin}: note: rule {rule.id} has no index key (code, level, module, format "
            "or literal) and is tested against every record\n"
        )
    sys.stdout.write(f"{len(ruleset.rules)} rules in {len(ruleset.files)} packs: OK\n")
    return EXIT_OK


def _run_rules_test(args: argparse.Namespace) -> int:
    ruleset = _load_for_checking(args.paths)
    if ruleset is None:
        return EXIT_FINDINGS
    count, failures = run_examples(ruleset.rules)
    for failure in failures:
        sys.stdout.write(f"{failure}\n")
    missing = [rule for rule in ruleset.rules if not rule.spec.examples.match]
    for rule in missing:
        sys.stdout.write(f"{rule.origin}: rule {rule.id} has no example that must match\n")
    status = "FAILED" if failures or missing else "OK"
    sys.stdout.write(
        f"{count} examples of {len(ruleset.rules)} rules: {len(failures)} failed, "
        f"{len(missing)} rules without examples: {status}\n"
    )
    return EXIT_FINDINGS if failures or missing else EXIT_OK


def _run_rules_import(args: argparse.Namespace) -> int:
    try:
        pack_text, count = convert_faultdiag(args.source)
    except (OSError, ValueError) as error:
        _fail(f"cannot import {args.source}: {error}")
    args.output.write_text(pack_text, encoding="utf-8")
    sys.stderr.write(f"npuwatch: wrote {count} rules to {args.output}\n")
    return EXIT_OK


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
    engine = None if args.no_rules else RuleEngine(_load_rules(args.rules))
    progress = ProgressLine(sys.stderr, "scanning")
    try:
        result = scan_tree(
            root,
            clock,
            context_lines=args.context,
            host=args.host,
            progress=progress.update,
            engine=engine,
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
