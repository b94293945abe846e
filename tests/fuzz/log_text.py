"""Log text as an attacker or a broken writer makes it: real lines of every format npuwatch
reads (plog, slog, device and firmware logs, console error blocks, HCCL, framework prefixes),
mutated where parsers are fragile: numbers past 64 bits, dates that do not exist, NUL, bytes that
are not UTF-8, GBK, control characters and terminal escapes, torn headers.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from hypothesis import strategies as st

from tests.conftest import FIXTURES

LOG_FOLDERS = ("golden", "trees", "collective", "debug_tools/sanitizer")
LINES_PER_FILE = 40
"""The first lines of each fixture log: enough of every format without one flood dominating."""


@functools.cache
def real_lines() -> tuple[bytes, ...]:
    """Distinct lines of the project's fixture logs, in a fixed order."""
    lines: dict[bytes, None] = {}
    for folder in LOG_FOLDERS:
        for path in sorted((FIXTURES / folder).rglob("*.log")):
            for line in path.read_bytes().split(b"\n")[:LINES_PER_FILE]:
                if line.strip():
                    lines[line] = None
    return tuple(lines)


HUGE_NUMBERS = (
    b"9223372036854775807",  # 2**63 - 1
    b"9223372036854775808",  # 2**63: the pid that stopped the journal
    b"18446744073709551616",  # 2**64
    b"-9223372036854775809",
    b"99999999999999999999999999999999999999",
    b"0000000000000000000000000000000000000001",
    b"4294967296",  # 2**32
    b"2147483648",  # 2**31
    b"1e308",
    b"-0",
)
IMPOSSIBLE_DATES = (
    b"2025-02-30",
    b"2023-02-29",
    b"2025-04-31",
    b"2025-13-01",
    b"2025-00-10",
    b"2025-12-00",
    b"0000-01-01",
    b"9999-12-31",
    b"1969-12-31",
    b"2025-99-99",
)
IMPOSSIBLE_TIMES = (b"24:00:00", b"25:61:61", b"23:59:60", b"99:99:99", b"00:00:-1")
HOSTILE_BYTES = (
    b"\x00",
    b"\x00" * 64,
    b"\xff",
    b"\xc3",  # a UTF-8 lead byte without its continuation
    b"\xed\xa0\x80",  # an encoded surrogate
    b"\xe4\xb8\xad\xe6\x96\x87",  # 中文 in UTF-8
    "中文错误".encode("gbk"),
    b"\x1b[2J\x1b[H",  # clear the screen
    b"\x1b]52;c;ZXZpbA==\x07",  # OSC 52: write the reader's clipboard
    b"\x1b]0;title\x07",
    b"\x9b31m",  # a C1 control sequence introducer
    b"\r",
    b"\r\r\n",
    b"\x0b\x0c",
    b"\x7f",
    b"\x08\x08\x08",
    "\u2028\u2029\u0085".encode(),
    "\ufeff".encode(),
    b"\t" * 9,
)
FORMAT_TOKENS = (
    b"[ERROR] ",
    b"[INFO] ",
    b"[EVENT] ",
    b"ERR0R] ",
    b"[DEBUG]",
    b"HCCL(",
    b"RUNTIME(",
    b"(-1,null):",
    b"(123,python3):",
    b"2025-03-11-08:12:40.117.305 ",
    b"1970-01-01-08:00:00.000.000 ",
    b"[PID: 12] ",
    b"EZ9999: ",
    b"E30009",
    b"Title(EI0002): ",
    b"error code is 507035",
    b"[rank3]: ",
    b"(VllmWorker TP1 pid=9) ",
    b"<exception_print>",
    b"TraceBack (most recent call last):",
    b"    ",
    b"[E928 07:22:40.1 c.ts:4] ",
    b"(device_id:3 die_id:0)",
    b"[tid:7]",
    b"train.log:12:",
    b"> ",
    b"LINE:",
    b"[FUNC:x][FILE:y.cc][LINE:99999999999999999999]",
)


def _replace_match(data: bytes, pattern: bytes, pick: int, replacement: bytes) -> bytes:
    matches = list(re.finditer(pattern, data))
    if not matches:
        return data
    match = matches[pick % len(matches)]
    return data[: match.start()] + replacement + data[match.end() :]


Mutation = Callable[[st.DrawFn, bytes], bytes]


def _huge_number(draw: st.DrawFn, line: bytes) -> bytes:
    return _replace_match(
        line, rb"-?[0-9]+", draw(st.integers(0, 50)), draw(st.sampled_from(HUGE_NUMBERS))
    )


def _impossible_date(draw: st.DrawFn, line: bytes) -> bytes:
    pattern = rb"[0-9]{4}[-/][0-9]{2}[-/][0-9]{2}"
    return _replace_match(
        line, pattern, draw(st.integers(0, 5)), draw(st.sampled_from(IMPOSSIBLE_DATES))
    )


def _impossible_time(draw: st.DrawFn, line: bytes) -> bytes:
    pattern = rb"[0-9]{2}:[0-9]{2}:[0-9]{2}"
    return _replace_match(
        line, pattern, draw(st.integers(0, 5)), draw(st.sampled_from(IMPOSSIBLE_TIMES))
    )


def _insert(draw: st.DrawFn, line: bytes) -> bytes:
    at = draw(st.integers(0, len(line)))
    piece = draw(st.sampled_from(HOSTILE_BYTES + FORMAT_TOKENS) | st.binary(min_size=1, max_size=6))
    return line[:at] + piece + line[at:]


def _delete(draw: st.DrawFn, line: bytes) -> bytes:
    start = draw(st.integers(0, len(line)))
    end = draw(st.integers(start, min(len(line), start + 12)))
    return line[:start] + line[end:]


def _repeat(draw: st.DrawFn, line: bytes) -> bytes:
    """A piece of the line many times over (deep brackets, long digit runs, endless headers)."""
    start = draw(st.integers(0, len(line)))
    end = draw(st.integers(start, min(len(line), start + 8)))
    return line[:end] + line[start:end] * draw(st.integers(2, 300)) + line[end:]


def _splice(draw: st.DrawFn, line: bytes) -> bytes:
    """The start of this line and the end of another (a write torn by a second writer)."""
    other = draw(st.sampled_from(real_lines()))
    return line[: draw(st.integers(0, len(line)))] + other[draw(st.integers(0, len(other))) :]


def _byte_flip(draw: st.DrawFn, line: bytes) -> bytes:
    if not line:
        return line
    at = draw(st.integers(0, len(line) - 1))
    return line[:at] + bytes([draw(st.integers(0, 255))]) + line[at + 1 :]


MUTATIONS: tuple[Mutation, ...] = (
    _huge_number,
    _impossible_date,
    _impossible_time,
    _insert,
    _delete,
    _repeat,
    _splice,
    _byte_flip,
)


@st.composite
def mutated_line(draw: st.DrawFn, max_mutations: int = 4) -> bytes:
    """A real line with up to `max_mutations` mutations; it may come to hold newlines."""
    line = draw(st.sampled_from(real_lines()))
    for _ in range(draw(st.integers(0, max_mutations))):
        line = draw(st.sampled_from(MUTATIONS))(draw, line)
    return line


def log_stream(max_lines: int = 30) -> st.SearchStrategy[bytes]:
    """The bytes of a log file: mutated real lines, sometimes raw bytes, with any line ends."""
    line = mutated_line() | st.binary(max_size=80) | st.sampled_from(HOSTILE_BYTES)
    ending = st.sampled_from([b"\n", b"\n", b"\n", b"\r\n", b""])
    return st.builds(
        lambda lines, end: b"\n".join(lines) + end if lines else b"",
        st.lists(line, max_size=max_lines),
        ending,
    )


PATH_NAMES = (
    "debug/plog/plog-{n}_{stamp}.log",
    "run/plog/plog-{n}_{stamp}.log",
    "debug/device-{n}/device-{n}_{stamp}.log",
    "debug/device-os-{n}/device-os_{stamp}.log",
    "run/event/event_{stamp}.log",
    "debug/device-app-{n}/device-app-{n}_{stamp}.log",
    "slogd/host-{n}_{stamp}.log",
    "job/train-rank{n}.log",
    "{n}.log",
)
STAMPS = (
    "20250914093300120",
    "20250230000000000",  # 30 February
    "20231302250000000",
    "99999999999999999",
    "00000000000000000",
    "2025091409330012",  # one digit short
    "202509140933001200",
)


def log_path() -> st.SearchStrategy[str]:
    """A path as a CANN tree names its files, with hostile pids, device numbers and stamps."""
    number = st.sampled_from([b.decode() for b in HUGE_NUMBERS if b[:1].isdigit()]) | st.integers(
        0, 70000
    ).map(str)
    return st.builds(
        lambda pattern, n, stamp: "/log/" + pattern.format(n=n, stamp=stamp),
        st.sampled_from(PATH_NAMES),
        number,
        st.sampled_from(STAMPS),
    )
