"""The findings of one debugging-tool output, worked out in a child process for the agent.

A compare workbook, a monitor folder of a long run (millions of statistics rows) or a big
sanitizer report is read with pandas and the summaries of `npuwatch precision|monitor|sanitizer
summary` (debug_tools/findings.py); the agent lives for months next to training jobs and must
neither load pandas nor keep the memory, so a child reads the output, prints its digest as JSON
and exits:

    python -I -m npuwatch.agent.debug_digest KIND PATH     # one JSON document on stdout
"""

from __future__ import annotations

import json
import math
import sys
import threading
from pathlib import Path
from typing import Any

from npuwatch.agent.child_reader import read_in_child
from npuwatch.debug_tools import digest_output
from npuwatch.debug_tools.findings import OutputDigest


def digest_in_child(
    kind: str, path: Path, timeout_s: float = 600.0, stop: threading.Event | None = None
) -> OutputDigest:
    """`digest_output(kind, path)` in a child interpreter (see the module docstring); the
    child is killed (ChildStopped) once `stop` is set."""
    arguments = [kind, str(path.absolute())]  # the child starts in /
    document = read_in_child("npuwatch.agent.debug_digest", arguments, timeout_s, stop)
    return OutputDigest(**document)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: python -I -m npuwatch.agent.debug_digest KIND PATH\n")
        return 2
    try:
        digest = digest_output(argv[0], Path(argv[1]))
    except Exception as error:  # the parent logs this line
        sys.stderr.write(f"{type(error).__name__}: {error}\n")
        return 1
    document = {
        "kind": digest.kind,
        "entries": digest.entries,
        "figures": digest.figures,
        "problems": digest.problems,
    }
    json.dump(_plain(document), sys.stdout, ensure_ascii=False, allow_nan=False)
    return 0


def _plain(value: Any) -> Any:
    """JSON values only: NaN and inf (a gradient norm that overflowed) become null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if value is None or isinstance(value, str | int | bool):
        return value
    return str(value)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
