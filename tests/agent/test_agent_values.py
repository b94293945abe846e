"""The real agent process on lines whose numbers or dates no column can hold: a pid of 2**63, a
thread id of 10**30, 30 February. Each costs at most its field; the agent journals every record
of every file, and a restart reads on."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest

from npuwatch.journal.block import decode_block
from npuwatch.journal.reader import JournalReader, Position
from npuwatch.journal.rows import StoredRecord
from npuwatch.records import Flag
from tests.agent.harness import append, plog_line, plog_path, wait_until
from tests.agent.test_agent_process import journal_lines, start_agent, stop

pytestmark = pytest.mark.integration

HUGE = (2**63, 10**30, 2**64 + 1, -(2**63))


def hostile_plog_lines(first: int, count: int) -> list[str]:
    """Plog lines that alternate a plain line with one carrying a number past 64 bits (in the
    header's pid, the body's thread id or origin line) or an impossible date."""
    lines = []
    for number in range(first, first + count):
        lines.append(plog_line(100, number))
        huge = HUGE[number % len(HUGE)]
        kind = number % 4
        if kind == 0:
            lines.append(
                f"[ERROR] HCCL({huge},python3):2025-09-14-09:00:01.000.000 [hccl.cc:42] [7] pid"
                f" {number}"
            )
        elif kind == 1:
            lines.append(
                f"[ERROR] HCCL(100,python3):2025-09-14-09:00:01.000.000 [hccl.cc:{huge}]"
                f" [{huge}] body {number}"
            )
        elif kind == 2:
            lines.append(
                f"[ERROR] HCCL(100,python3):2025-02-30-25:00:01.000.000 [hccl.cc:42] [7] date"
                f" {number}"
            )
        else:
            lines.append(f"[ERROR] HCCL(100,python3):2025-09-14-09:00:01.000.000 E30009 {number}")
    return lines


def hostile_console_lines(first: int, count: int) -> list[str]:
    """Console error blocks (framework output) with a pid past 64 bits, and plain ones."""
    lines = []
    for number in range(first, first + count):
        huge = HUGE[number % len(HUGE)]
        lines += [
            f"EZ9999: [PID: {huge}] 2025-09-14-09:00:01.000.000 Inner Error {number}",
            "        Possible Cause: the peer is gone",
            f"[PID: {huge}] 2023-02-29-10:00:00.000.000 Title(EI0002): wait {number}",
            f"[ERROR] 2025-09-14-09:00:01.000.000 (PID:{huge}, Device:{huge}, RankID:1)"
            f" ERR02200 torch {number}",
            f"EZ9999: [PID: 12] 2025-09-14-09:00:01.000.000 plain {number}",
        ]
    return lines


def stored_records(tmp_path: Path) -> list[StoredRecord]:
    found = []
    with JournalReader(tmp_path / "state" / "journal") as reader:
        position = Position()
        while page := reader.blocks_after(position, 64):
            for _, block in page:
                found += decode_block(block.payload)
            position = page[-1][0]
    return found


def wait_for_all(tmp_path: Path, process: subprocess.Popen[bytes], expected: Counter[str]) -> None:
    """Wait until the journal holds `expected`; fail at once when the agent exits instead."""

    def done() -> bool:
        assert process.poll() is None, process.communicate()[1].decode()[-2000:]
        return not (expected - journal_lines(tmp_path))

    wait_until(done)


def test_numbers_past_64_bits_and_impossible_dates_cost_no_record_and_a_restart_reads_on(
    tmp_path: Path,
) -> None:
    logs = tmp_path / "logs"
    hostile, clean = plog_path(logs, 100), plog_path(logs, 200)
    console = logs / "train" / "console.log"
    console.parent.mkdir(parents=True)
    first = hostile_plog_lines(0, 40) + hostile_console_lines(0, 8)
    first_clean = [plog_line(200, number) for number in range(100)]
    append(hostile, hostile_plog_lines(0, 40))
    append(console, hostile_console_lines(0, 8))
    append(clean, first_clean)
    process = start_agent(tmp_path)
    wait_for_all(tmp_path, process, Counter(first + first_clean))
    code, err = stop(process)
    assert code == 0, err

    second = hostile_plog_lines(40, 40) + hostile_console_lines(8, 8)
    second_clean = [plog_line(200, number) for number in range(100, 200)]
    append(hostile, hostile_plog_lines(40, 40))
    append(console, hostile_console_lines(8, 8))
    append(clean, second_clean)
    process = start_agent(tmp_path)
    wait_for_all(tmp_path, process, Counter(first + second + first_clean + second_clean))
    code, err = stop(process)
    assert code == 0, err
    assert journal_lines(tmp_path) == Counter(first + second + first_clean + second_clean)


def test_a_journaled_record_with_a_pid_past_64_bits_has_no_pid_and_says_why(
    tmp_path: Path,
) -> None:
    logs = tmp_path / "logs"
    line = f"[ERROR] HCCL({2**63},python3):2025-09-14-09:00:01.000.000 [hccl.cc:42] [7] boom"
    date = "[ERROR] HCCL(5,python3):2025-02-30-00:00:01.000.000 [hccl.cc:42] [7] odd"
    append(plog_path(logs, 100), [line, date, plog_line(100, 1)])
    process = start_agent(tmp_path)
    wait_for_all(tmp_path, process, Counter([line, date, plog_line(100, 1)]))
    code, err = stop(process)
    assert code == 0, err
    by_text = {record.original: record for record in stored_records(tmp_path)}
    assert by_text[line].pid is None
    assert by_text[line].flags & Flag.VALUE_OUT_OF_RANGE
    assert by_text[date].timestamp_us is None
    assert by_text[date].pid == 5
    assert by_text[date].flags & Flag.VALUE_OUT_OF_RANGE
    assert by_text[plog_line(100, 1)].flags == 0
