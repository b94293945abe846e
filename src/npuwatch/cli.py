"""The `npuwatch` command: arguments in, library calls out, exit codes back.

Only the arguments of the command being run are built (all of them for --help or a mistake),
and a command's handler is named by a dotted path and imported when it runs, so that
`npuwatch grep` never pays for the parser, the rules engine or pydantic, and `npuwatch --help`
answers at once.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from npuwatch import __version__
from npuwatch.commands.outcome import EXIT_OK
from npuwatch.gc_tuning import tune_garbage_collector
from npuwatch.problems import Problems
from npuwatch.terminal import visible_output

_ARGUMENTS = {
    "parse": "npuwatch.commands.offline:add_offline_commands",
    "scan": "npuwatch.commands.offline:add_offline_commands",
    "summarize": "npuwatch.commands.offline:add_offline_commands",
    "schema": "npuwatch.commands.offline:add_offline_commands",
    "rules": "npuwatch.commands.rules:add_rules_commands",
    "config": "npuwatch.commands.config:add_config_commands",
    "agent": "npuwatch.commands.agent:add_agent_command",
    "grep": "npuwatch.commands.grep:add_grep_command",
    "es": "npuwatch.commands.es:add_es_commands",
    "profile": "npuwatch.commands.profile:add_profile_commands",
    "baseline": "npuwatch.commands.baseline:add_baseline_commands",
    "precision": "npuwatch.commands.precision:add_precision_commands",
    "monitor": "npuwatch.commands.monitor:add_monitor_commands",
    "sanitizer": "npuwatch.commands.sanitizer:add_sanitizer_commands",
    "doctor": "npuwatch.commands.doctor:add_doctor_command",
    "correlate": "npuwatch.commands.correlate:add_correlate_command",
    "incident": "npuwatch.commands.incident:add_incident_commands",
}
"""Each command, and the function that adds its arguments (in the order --help lists them)."""


def main(argv: Sequence[str] | None = None) -> int:
    tune_garbage_collector()
    arguments = sys.argv[1:] if argv is None else list(argv)
    # Log lines and file names reach the terminal through what every command prints (records,
    # reports, error lines, its log): shown, never acted on (terminal.py). A traceback the
    # interpreter prints after main() is not: that is a bug to fix, not a path to guard.
    with visible_output(exact_stdout=False):
        parser = _build_parser(arguments[0] if arguments else None)
        args = parser.parse_args(arguments)
    with visible_output(exact_stdout=_prints_data(args)):
        return _run(args)


def _prints_data(args: argparse.Namespace) -> bool:
    """Whether the command prints JSON or CSV on standard output, which stays exact: every
    command names those formats --json, --csv or --format jsonl (STYLE.md, the command line)."""
    return bool(
        getattr(args, "json", False)
        or getattr(args, "csv", False)
        or getattr(args, "format", None) == "jsonl"
    )


def _run(args: argparse.Namespace) -> int:
    try:
        result: int = _handler(args.handler)(args)
    except BrokenPipeError:
        # `npuwatch parse ... | head`: the reader went away; that is not an error.
        _silence_stdout()
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
    except Problems as problems:
        # What keeps a command from starting (a wrong configuration, rules that do not load,
        # an unreadable input): every problem a line, said once, here.
        for line in problems.lines():
            sys.stderr.write(f"npuwatch: {line}\n")
        return problems.exit_code
    return result


def _handler(name: str) -> Callable[[argparse.Namespace], int]:
    """The function a "package.module:function" name stands for."""
    handler: Callable[[argparse.Namespace], int] = _function(name)
    return handler


def _function(name: str) -> Any:
    module, _, function = name.partition(":")
    return getattr(importlib.import_module(module), function)


class _Version(argparse.Action):
    """`npuwatch 0.2.0 (C speedups on)`: the speedups are looked at only when asked (they load
    the parser's package)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from npuwatch.speedups import speedups  # noqa: PLC0415 - see the docstring

        sys.stdout.write(f"npuwatch {__version__} ({speedups().summary()})\n")
        parser.exit()


def _build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser, with the arguments of `command` only when it is a known one (so --help and
    a misspelt command still list them all)."""
    parser = argparse.ArgumentParser(
        prog="npuwatch",
        description="Log and telemetry pipeline for Huawei Ascend NPU clusters: parse CANN "
        "logs (plog, device logs, console error blocks) into structured records and summarise "
        "what went wrong.",
        epilog="exit status, for every command (each command's --help says what 1 means there):\n"
        "  0  all well\n"
        "  1  findings: error records, failed checks, a regression, problems in a file checked\n"
        "  2  bad usage or unreadable input (one line on stderr saying what to do)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version",
        action=_Version,
        nargs=0,
        help="show the version, and whether the C speedups are on, and exit",
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)

    if command in _ARGUMENTS:
        adders = [_ARGUMENTS[command]]
    else:
        adders = list(dict.fromkeys(_ARGUMENTS.values()))
    for adder in adders:
        _function(adder)(commands)
    return parser


def every_command() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Each command's name (`npuwatch es setup`) and parser, the whole tree: what the generated
    reference pages and the tests of every `--help` walk."""
    pending = [("npuwatch", _build_parser(None))]
    while pending:
        name, parser = pending.pop(0)
        yield name, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                pending[:0] = [(f"{name} {child}", sub) for child, sub in action.choices.items()]


def _silence_stdout() -> None:
    # Point stdout at /dev/null so that the interpreter's final flush does not fail again.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
