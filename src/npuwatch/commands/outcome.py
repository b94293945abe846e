"""Exit codes and error lines shared by every command.

Exit codes follow the tools operators already use: 0 all well, 1 findings (errors in the logs, a
failed check), 2 a usage or input error. Every error is one line on standard error that says
what to do.
"""

from __future__ import annotations

import sys
from typing import NoReturn

from npuwatch.problems import Problems

EXIT_OK = 0
EXIT_FINDINGS = 1


USAGE_LINE = "  2  bad usage or unreadable input (one line on stderr saying what to do)"


def exit_status(ok: str, findings: str | None = None) -> str:
    """The `exit status:` part of a command's --help: what 0 and 1 mean for it; 2 means the
    same for every command."""
    lines = ["exit status:", f"  0  {ok}"]
    if findings is not None:
        lines.append(f"  1  {findings}")
    return "\n".join([*lines, USAGE_LINE]) + "\n"


def error(message: str) -> None:
    sys.stderr.write(f"npuwatch: {message}\n")


def fail(message: str) -> NoReturn:
    """Leave with `message` as the error line and the usage/input exit code (cli.main says
    it)."""
    raise Problems([message])
