"""The `npuwatch` command: arguments in, library calls out, exit codes back.

Building the parser imports only the argument modules; a command's handler is named by a dotted
path and imported when it runs, so that `npuwatch grep` never pays for the parser, the rules
engine or pydantic, and `npuwatch --help` answers at once.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence

from npuwatch import __version__
from npuwatch.commands.agent import add_agent_command
from npuwatch.commands.config import add_config_commands
from npuwatch.commands.grep import add_grep_command
from npuwatch.commands.offline import add_offline_commands
from npuwatch.commands.outcome import EXIT_OK
from npuwatch.commands.rules import add_rules_commands
from npuwatch.gc_tuning import tune_garbage_collector


def main(argv: Sequence[str] | None = None) -> int:
    tune_garbage_collector()
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        result: int = _handler(args.handler)(args)
    except BrokenPipeError:
        # `npuwatch parse ... | head`: the reader went away; that is not an error.
        _silence_stdout()
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
    return result


def _handler(name: str) -> Callable[[argparse.Namespace], int]:
    """The function a "package.module:function" name stands for."""
    module, _, function = name.partition(":")
    handler: Callable[[argparse.Namespace], int] = getattr(
        importlib.import_module(module), function
    )
    return handler


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

    add_offline_commands(commands)
    add_rules_commands(commands)
    add_config_commands(commands)
    add_agent_command(commands)
    add_grep_command(commands)
    return parser


def _silence_stdout() -> None:
    # Point stdout at /dev/null so that the interpreter's final flush does not fail again.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
