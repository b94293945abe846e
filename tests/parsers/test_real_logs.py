"""The real excerpts in ../shared/real-logs (public issues, docs, test data of Ascend tools).

They are read from that folder, never copied here; the tests skip when it is absent.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

import pytest

from npuwatch.records import Record
from tests.conftest import parse, real_log_files

pytestmark = pytest.mark.realdata

# An independent reading of the header, written from the formats doc rather than from the
# parser: a CANN header anywhere on the line, with every anomaly of §1.2 allowed.
HEADER_ANYWHERE = re.compile(
    r"\[?(DEBUG|INFO|WARNING|ERROR|ERR0R|EVENT|TRACE|OPLOG|NULL|EXCEPTION|CRITICAL)\] ?"
    r"([A-Z][A-Z0-9_]*)\((-?\d+),\s?(?:[0-9a-f]{6,16},)?([^)]*)\)\s?:\s?"
    r"(\d{4})-(\d\d)-(\d\d)[- ](\d\d):(\d\d):?(\d\d)\.(\d{3})\.(\d{3})"
)


@pytest.mark.parametrize("path", real_log_files(), ids=lambda p: p.stem)
def test_every_real_file_is_given_back_exactly(path: Path) -> None:
    data = path.read_bytes()
    records = parse(data, path=str(path))
    joined = "\n".join(r.original for r in records) + ("\n" if data.endswith(b"\n") else "")
    assert joined == data.decode("utf-8", "backslashreplace")


def test_header_lines_give_correct_level_module_pid_name_and_time(real_logs: list[Path]) -> None:
    checked = correct = 0
    wrong: list[str] = []
    for path in real_logs:
        data = path.read_bytes()
        starts = {record.offset: record for record in parse(data, path=str(path))}
        offset = 0
        for raw in data.split(b"\n"):
            line = raw.decode("utf-8", "replace")
            match = HEADER_ANYWHERE.search(line)
            if match is not None:
                checked += 1
                fields = [int(match[i]) for i in range(5, 11)]
                micros = int(match[11]) * 1000 + int(match[12])
                expected = (
                    match[1].replace("ERR0R", "ERROR"),
                    match[2],
                    int(match[3]),
                    match[4].lstrip(" "),
                    int(datetime(*fields, tzinfo=timezone.utc).timestamp()) * 1_000_000 + micros,
                )
                record = starts.get(offset)
                got = (
                    None
                    if record is None
                    else (
                        record.level,
                        record.logger,
                        record.pid,
                        record.process_name,
                        record.timestamp_us,
                    )
                )
                if got == expected:
                    correct += 1
                else:
                    wrong.append(f"{path.name}: {line[:120]} -> {got}")
            offset += len(raw) + 1
    assert checked > 600, "the corpus should hold several hundred header lines"
    assert correct / checked >= 0.995, "\n".join(wrong[:20])


def test_every_real_file_parses_without_unparsed_header_lines(real_logs: list[Path]) -> None:
    for path in real_logs:
        for record in parse(path.read_bytes(), path=str(path)):
            if HEADER_ANYWHERE.match(record.original):
                assert record.format in {"slog", "mindspore"}, record.original[:120]


CANN_FORMATS = frozenset({"slog", "mindspore"})


def line_starts(records: list[Record]) -> list[int]:
    """The number of the line each record starts on, counting from 0."""
    starts, line = [], 0
    for record in records:
        starts.append(line)
        line += record.original.count("\n") + 1
    return starts


@pytest.mark.parametrize("indentation", ["    ", "\t", "  > "])
def test_indented_real_logs_keep_every_header_line_a_record_of_its_own(
    real_logs: list[Path], indentation: str
) -> None:
    """Pasted into a ticket or a document, every line indented: each line that started a CANN
    record still starts one, with the same header fields, and no other line does."""
    headers = 0
    for path in real_logs:
        text = path.read_bytes().decode("utf-8", "backslashreplace")
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        plain = parse(text, path=str(path))
        indented = [indentation + line for line in lines]
        pasted = parse("".join(line + "\n" for line in indented), path=str(path))
        assert "\n".join(r.original for r in pasted) == "\n".join(indented)  # lossless
        cann = {
            start: record
            for start, record in zip(line_starts(plain), plain, strict=True)
            if record.format in CANN_FORMATS
        }
        expected = sorted(cann.keys() | {0})  # the first line starts a record whatever it is
        found = dict(zip(line_starts(pasted), pasted, strict=True))
        assert sorted(found) == expected, path.name
        for start, record in cann.items():
            header = (record.level, record.logger, record.pid, record.process_name)
            again = found[start]
            assert (again.level, again.logger, again.pid, again.process_name) == header
            assert again.timestamp_us == record.timestamp_us, path.name
        headers += len(cann)
    assert headers == 683  # every CANN record of the corpus
