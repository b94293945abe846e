"""Prefixes that wrap a CANN line and must not hide it (formats doc §1.2, last row).

Frameworks and people re-print CANN lines behind their own prefixes: grep output
(`run/plog/plog-1_2.log:` and `path:14:`), torch.distributed (`[rank1]: `), vLLM's worker and
logger prefixes (`(VllmWorker TP1 pid=961) ERROR 09-07 01:11:09 [file.py:596] `), Ray
(`(RayWorkerWrapper pid=11394, ip=10.0.1.4) `), test-runner stamps (`[2026-03-19 15:04:57] `),
markdown quotes (`> `) and llama.cpp (`CANN error: `). They nest, so they are peeled one at a time.

Indentation is a prefix too: log lines quoted in tickets, documents and chat are indented. But the
continuation lines of real records are indented as well (TraceBack chains, `<exception_print>`
dumps, JSON), so a line whose prefixes include blanks starts a record only when a complete CANN
header follows them; `Prefix.indented` tells the classifier to hold it to that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from npuwatch.bounded_numbers import field_int

_GREP_PATH = re.compile(r"[\w./~-]*[\w-]\.log(?:\.old)?:(?:[0-9]+:)?")
_RANK = re.compile(r"\[rank([0-9]+)\]: ?")
_WORKER = re.compile(r"\(([^()]*?) pid=([0-9]+)(?:, ip=[0-9a-fA-F.:]+)?\) ")
_VLLM_LOGGER = re.compile(
    r"(DEBUG|INFO|WARNING|ERROR|CRITICAL) ([0-9]{2})-([0-9]{2}) ([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.[0-9]+)? \[([\w./-]+):([0-9]+)\] ?"
)
_STAMP = re.compile(r"\[[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\] ")
_QUOTE = re.compile(r"> ?")
_CANN_ERROR = re.compile(r"CANN error: ")
INDENTATION = frozenset(" \t")
_INDENTATION = re.compile(r"[ \t]+")
_MAX_PREFIXES = 8


@dataclass
class Prefix:
    """What the peeled prefixes said about the line they wrapped."""

    end: int = 0
    rank: int | None = None
    pid: int | None = None
    process_name: str | None = None
    level: str | None = None
    date: tuple[int, int, int, int, int] | None = None
    """Month, day, hour, minute, second from a vLLM logger prefix (it prints no year)."""
    origin_file: str | None = None
    origin_line: int | None = None
    indented: bool = False
    """Blanks were peeled: the line is a record of its own only if a CANN header comes next."""
    flags: int = 0
    """Flags for the record the line starts: a number that did not fit (`value_out_of_range`)."""


def peel(text: str) -> Prefix | None:
    """Peel every known prefix off the start of `text`; None when there is none."""
    prefix: Prefix | None = None
    position = 0
    for _ in range(_MAX_PREFIXES):
        first = text[position : position + 1]
        if not first:
            break
        match: re.Match[str] | None = None
        found = prefix or Prefix()
        if first == "[":
            match = _RANK.match(text, position)
            if match is not None:
                found.rank = field_int(found, match[1])
            else:
                match = _STAMP.match(text, position)
        elif first == "(":
            match = _WORKER.match(text, position)
            if match is not None:
                found.process_name = match[1].strip()
                found.pid = field_int(found, match[2])
        elif first == ">":
            match = _QUOTE.match(text, position)
        elif first in INDENTATION:
            match = _INDENTATION.match(text, position)
            found.indented = True
        elif first == "C" and text.startswith("CANN error: ", position):
            match = _CANN_ERROR.match(text, position)
        elif first.isupper() and (match := _VLLM_LOGGER.match(text, position)) is not None:
            found.level = match[1]
            found.date = (int(match[2]), int(match[3]), int(match[4]), int(match[5]), int(match[6]))
            found.origin_file, found.origin_line = match[7], field_int(found, match[8])
        if match is None and first not in "[(":
            match = _GREP_PATH.match(text, position)
        if match is None or match.end() == position:
            break
        position = match.end()
        prefix = found
        prefix.end = position
    return prefix
