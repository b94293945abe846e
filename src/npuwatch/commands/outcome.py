"""Exit codes and error lines shared by every command.

Exit codes follow the tools operators already use: 0 all well, 1 findings (errors in the logs, a
failed check), 2 a usage or input error. Every error is one line on standard error that says
what to do.
"""

from __future__ import annotations

import sys
from typing import NoReturn

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2


def error(message: str) -> None:
    sys.stderr.write(f"npuwatch: {message}\n")


def fail(message: str) -> NoReturn:
    """Print `message` as an error line and leave with the usage/input exit code."""
    error(message)
    raise SystemExit(EXIT_USAGE)
