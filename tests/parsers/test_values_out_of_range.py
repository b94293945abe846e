"""Numbers no 64-bit field can hold and dates that do not exist, in any line a parser reads:
each costs its field (left empty, the record flagged `value_out_of_range`), never the record,
the file or the run. `original` keeps the text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from npuwatch.bounded_numbers import LARGEST, fitting_int
from npuwatch.parsers.first_pass import NATIVE, scan_chunk, scan_chunk_python
from npuwatch.parsers.slog import SlogRecord
from npuwatch.parsers.stream import parse_bytes
from npuwatch.records import Flag, SourceInfo
from tests.conftest import utc_clock
from tests.npuwatch_command import run_npuwatch

HUGE = [2**63, 10**30, 2**64 + 1, -(2**63), int("9" * 400)]
HEADER = "[ERROR] HCCL({pid},python3):{date}-09:00:01.000.000 "

LINES_WITH_HUGE_NUMBERS = [
    # the CANN header's pid, the body's origin line and thread id
    HEADER.format(pid=2**63, date="2025-09-14") + "[hccl.cc:42] [7] pid",
    HEADER.format(pid=5, date="2025-09-14") + f"[hccl.cc:{10**30}] [{2**64}] body",
    HEADER.format(pid=5, date="2025-09-14") + f"[a.cc:1]{' ' * 1}{10**25} Func: tid",
    # the tolerant header, MindSpore's hex thread id
    f"[ERROR] HCCL({10**20}, python3):2025-09-14 09:00:01.000.000 tolerant",
    f"[ERROR] ME({2**63},{'f' * 16},python):2025-09-14-09:00:01.000.000 mindspore",
    # console error blocks, torch_npu, c10, prefixes
    f"EZ9999: [PID: {2**63}] 2025-09-14-09:00:01.000.000 Inner Error",
    f"[PID: {10**30}] 2025-09-14-09:00:01.000.000 Title(EI0002): wait",
    f"[ERROR] 2025-09-14-09:00:01.000.000 (PID:{2**63}, Device:{2**63}, RankID:{2**63}) ERR02200 x",
    f"[E914 09:37:31.1 compiler.ts:{2**63}] c10",
    f"[rank{2**63}]: [ERROR] HCCL(5,p):2025-09-14-09:00:01.000.000 [a.cc:1] [1] rank prefix",
    f"(Worker pid={10**30}) ERROR 09-14 09:00:01 [a.py:{2**64}] vllm",
    # neighbouring formats
    f"2025-09-14 09:00:01.000[ERROR] log.c:{2**63}: slogd",
    f"[2025-09-14 09:00:01.5] [error] [{10**30}] [a.cpp:{10**30}] mindie",
    f"[{2**63}] [2025-09-14 09:00:01:5] torch.distributed: [ERROR] [{2**64}] td",
    f"Sep 14 09:00:01 host comm[{2**63}]: ({10**30})a.c:{2**64}: syslog",
]

LINES_WITH_IMPOSSIBLE_DATES = [
    "[ERROR] HCCL(5,python3):2025-02-30-00:00:01.000.000 [a.cc:1] [1] strict",
    "[ERROR] HCCL(5,python3):2023-02-29-00:00:01.000.000 [a.cc:1] [1] not a leap year",
    "[ERROR] HCCL(5,python3):2025-13-01-25:61:75.000.000 [a.cc:1] [1] month 13",
    "[ERROR] HCCL(5,python3):0000-01-01-00:00:01.000.000 [a.cc:1] [1] year 0",
    "[ERROR] HCCL(5, python3):2025-02-30 00:00:01.000.000 tolerant",
    "EZ9999: [PID: 5] 2025-02-30-00:00:01.000.000 console",
    "[PID: 5] 2025-04-31-10:00:00.000.000 Title(EI0002): console",
    "[ERROR] 2025-02-30-00:00:01.000.000 (PID:5, Device:0, RankID:1) ERR02200 torch",
    "2025-02-30 09:00:01.000[ERROR] log.c:1: slogd",
    "2025-02-30 10:42:00,218 - lm - ERROR - model.py:489 - python logging",
    "[2025-02-30-09:00:01.000000] [ascend] kernel",
    "[2025-02-30 09:00:01.5] [error] [1] [a.cpp:1] mindie",
    "[1] [2025-02-30 09:00:01:5] torch.distributed: [ERROR] td",
    "[Install] [2025-02-30 09:00:01] [ERROR] install",
    "[ERROR]HSM:2025-02-30 00:03:45.333 firmware",
]


@pytest.mark.parametrize("line", LINES_WITH_HUGE_NUMBERS)
def test_a_number_past_64_bits_leaves_its_field_empty_and_flags_the_record(line: str) -> None:
    (record,) = parse_bytes(line.encode() + b"\n", utc_clock())
    document = record.to_document()  # derives every body field
    assert "value_out_of_range" in document["ascend"]["flags"]
    assert document["event"]["original"] == line
    for value in _integers(document):
        assert -LARGEST <= value <= LARGEST


@pytest.mark.parametrize("line", LINES_WITH_IMPOSSIBLE_DATES)
def test_an_impossible_date_keeps_the_record_with_no_time_and_a_flag(line: str) -> None:
    before = "[INFO] HCCL(5,python3):2025-09-14-09:00:01.000.000 [a.cc:1] [1] a real time"
    records = parse_bytes(f"{before}\n{line}\n".encode(), utc_clock())
    assert [record.original for record in records] == [before, line]
    document = records[1].to_document()
    assert "@timestamp" not in document  # not even the time of the line before
    assert document["ascend"]["flags"] == ["value_out_of_range"]


def _integers(value: object) -> list[int]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, dict):
        return [n for item in value.values() for n in _integers(item)]
    if isinstance(value, list):
        return [n for item in value for n in _integers(item)]
    return []


def test_parse_prints_every_record_of_a_file_full_of_hostile_values(tmp_path: Path) -> None:
    path = tmp_path / "plog-1_20250914093300000.log"
    lines = LINES_WITH_HUGE_NUMBERS + LINES_WITH_IMPOSSIBLE_DATES
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    parsed = run_npuwatch("parse", str(path))
    assert parsed.returncode == 0, parsed.stderr
    documents = [json.loads(line) for line in parsed.stdout.splitlines()]
    assert [d["event"]["original"] for d in documents] == lines
    assert all("value_out_of_range" in d["ascend"]["flags"] for d in documents)


def test_scan_reports_a_tree_whose_files_open_with_impossible_dates(tmp_path: Path) -> None:
    """The year of year-less lines is looked for in a file's first 64 KiB: an impossible date
    there is passed over, and the report is printed whole."""
    tree = tmp_path / "logs"
    tree.mkdir()
    (tree / "train.log").write_text(
        "started 2023-02-29 10:00 then 2025-02-30 00:00\n"
        "[W914 09:37:31.1 compiler.ts:4] warned\n"
        + "".join(line + "\n" for line in LINES_WITH_IMPOSSIBLE_DATES[:4]),
        encoding="utf-8",
    )
    (tree / "clean.log").write_text(
        "[INFO] HCCL(7,python3):2025-09-14-09:00:01.000.000 [a.cc:1] [1] fine\n", encoding="utf-8"
    )
    scanned = run_npuwatch("scan", "--json", str(tree))
    assert "Traceback" not in scanned.stderr
    assert scanned.returncode == 1, scanned.stderr  # findings: the ERROR records
    report = json.loads(scanned.stdout)
    assert report["files"] == 2
    assert report["records"] == 7
    assert report["flags"]["value_out_of_range"] == 4
    text = run_npuwatch("scan", str(tree))
    assert text.returncode == 1 and text.stdout.startswith("npuwatch scan of ")


digits = st.text(alphabet="0123456789", min_size=1, max_size=420)
signed = st.sampled_from(["", "-"])


@settings(max_examples=400, deadline=None)
@given(signed, digits, st.sampled_from(["2025-09-14", "2025-02-30", "2023-02-29", "9999-12-31"]))
@example("", "9223372036854775807", "2025-09-14")
@example("", "9223372036854775808", "2025-09-14")
@example("-", "9223372036854775808", "2025-09-14")
@example("-", "9223372036854775807", "2025-09-14")
@example("", "0" * 400 + "1", "2025-09-14")
def test_any_pid_or_date_in_a_header_gives_the_same_record_in_c_and_python_and_never_raises(
    sign: str, pid_digits: str, date: str
) -> None:
    line = HEADER.format(pid=sign + pid_digits, date=date) + "[a.cc:1] [1] x\n"
    clock = utc_clock()
    arguments = (line.encode(), 0, SlogRecord, clock.minutes, clock.slog_minute_us, 1 << 16)
    (by_python,) = scan_chunk_python(*arguments, SourceInfo())
    if NATIVE:
        (by_c,) = scan_chunk(*arguments, SourceInfo())
        assert sorted(vars(by_c).items()) == sorted(vars(by_python).items())  # type: ignore[arg-type]
    assert not isinstance(by_python, tuple)
    expected = fitting_int(sign + pid_digits)
    assert by_python.pid == expected
    out_of_range = expected is None or by_python.timestamp_us is None
    assert bool(by_python.flags & Flag.VALUE_OUT_OF_RANGE) == out_of_range
