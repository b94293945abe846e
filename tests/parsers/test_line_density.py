"""A chunk of very short lines (a file of only newlines) costs memory by its bytes, not by an
item per line: the first pass hands the stream parser a bounded number of lines at a time."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import npuwatch.parsers.first_pass as first_pass_module
from npuwatch.parsers.first_pass import NATIVE, scan_chunk, scan_chunk_python
from npuwatch.parsers.slog import SlogRecord
from npuwatch.parsers.stream import StreamParser
from npuwatch.records import SourceInfo
from tests.conftest import utc_clock
from tests.npuwatch_command import clean_environment

# The peak of this process's own memory: VmHWM starts again at exec, whereas ru_maxrss keeps the
# size of the (forked) parent, which a long test session makes large.
PEAK_RSS = (
    "import re, sys\n"
    "from pathlib import Path\n"
    "import npuwatch.parsers.first_pass as first_pass\n"
    "from npuwatch.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "print(first_pass.__file__, first_pass.NATIVE, file=sys.stderr)\n"
    "status = Path('/proc/self/status').read_text()\n"
    "print(re.search(r'VmHWM:\\s+(\\d+) kB', status)[1], file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def peak_kib(*arguments: str) -> tuple[int, str]:
    """`npuwatch ARGUMENTS` in a process of its own (this tree's package): its peak RSS in KiB
    and what it printed."""
    ran = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, *arguments],
        capture_output=True,
        text=True,
        env=clean_environment(),
        timeout=600,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    *_, imported, peak = ran.stderr.splitlines()
    assert imported.startswith(str(Path(first_pass_module.__file__))), imported  # this tree's
    return int(peak), ran.stdout


def test_parsing_a_file_of_only_newlines_stays_within_a_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "empty.log"
    path.write_bytes(b"\n" * 12_000_000)  # three of scan's 4 MiB chunks
    peak, out = peak_kib("parse", "--format", "jsonl", str(path))
    # An item per empty line took 130 bytes each: 600 MB for one chunk. Now a pass is bounded.
    assert peak < 200 * 1024, f"peak RSS {peak // 1024} MiB"
    assert len(out.splitlines()) == 12_000  # records of 1000 lines (max_record_lines) each


def _items(data: bytes, first: int = 0, max_lines: int = -1, native: bool = True) -> list[object]:
    clock = utc_clock()
    scan = scan_chunk if native else scan_chunk_python
    out: list[object] = []
    found = scan(
        data, 5, SlogRecord, clock.minutes, clock.slog_minute_us, 48, SourceInfo(), first, max_lines
    )
    for item in found:
        out.append(item if isinstance(item, tuple) else sorted(vars(item).items()))
    return out


lines = st.lists(
    st.sampled_from(["", "x", "[INFO] A(1,p):2025-01-01-00:00:00.000.000 y", "\r", "中"]),
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(lines, st.booleans(), st.integers(0, 8))
def test_a_chunk_taken_a_few_lines_at_a_time_gives_the_items_of_the_whole(
    text: list[str], newline_at_end: bool, max_lines: int
) -> None:
    data = "\n".join(text).encode() + (b"\n" if newline_at_end and text else b"")
    whole = _items(data, native=False)
    pieces: list[object] = []
    first = 0
    while first < len(data):
        part = _items(data, first, max_lines or 1, native=False)
        if NATIVE:
            assert _items(data, first, max_lines or 1) == part
        assert len(part) <= (max_lines or 1)
        pieces += part
        last = part[-1]
        first = (last[2] if isinstance(last, tuple) else dict(last)["end_offset"]) - 5  # type: ignore[index, call-overload]
    assert pieces == whole


def test_the_stream_parser_gives_the_same_records_for_more_lines_than_a_pass_takes() -> None:
    data = b"[INFO] A(1,p):2025-01-01-00:00:00.000.000 y\n" + b"\n" * 200_000 + b"tail\n"
    parser = StreamParser(utc_clock())
    records = parser.feed(data) + parser.flush()
    assert "\n".join(record.original for record in records) + "\n" == data.decode()
    assert [record.line_count for record in records] == [1000] * 200 + [2]
