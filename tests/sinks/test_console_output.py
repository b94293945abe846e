"""The console sink's text: log lines shown (their control characters as escapes), events on
one line each; its JSON lines exact, even when the output is a stream that escapes."""

from __future__ import annotations

import io
import json
from typing import TextIO, cast

from npuwatch.journal.reader import Position
from npuwatch.journal.segment import StoredBlock
from npuwatch.sinks.console_sink import ConsoleSink
from npuwatch.sinks.sink import Page
from npuwatch.terminal import VisibleStream
from tests.journal.conftest import SOURCE, block_of, parse_plog, plog_line

LINE = plog_line(1, level="ERROR", body="notify wait timeout \x1b]52;c;ZXZpbA==\x07\u202e")
EVENT = json.dumps(
    {
        "message": "timeout\x1b[2J\nsecond line",
        "rule": {"id": "hccl.timeout"},
        "log": {"file": {"path": "/r/plog\x1b[2J.log"}},
        "ascend": {"finding": {"severity": "error", "count": 2}},
    }
)


def page() -> Page:
    written = block_of(parse_plog(LINE + "\n"))
    block = StoredBlock(1, SOURCE, None, None, 1, 0, None, written.block.payload)
    return Page(blocks=[(Position(1, 1), block)], events=[(Position(1, 1), "e1", EVENT)])


def no_pause(announce: object = None) -> None:
    raise AssertionError("no pause is needed")


def test_text_shows_the_control_characters_of_lines_and_events() -> None:
    out = io.StringIO()

    ConsoleSink(out).deliver(page(), no_pause)

    assert out.getvalue().split("\n") == [
        LINE.replace("\x1b]52;c;ZXZpbA==\x07\u202e", "\\x1b]52;c;ZXZpbA==\\a\\u202e"),
        "EVENT error hccl.timeout x2 timeout\\x1b[2J\\nsecond line (/r/plog\\x1b[2J.log)",
        "",
    ]


def test_json_lines_stay_exact_when_the_output_escapes() -> None:
    out = io.StringIO()

    ConsoleSink(cast(TextIO, VisibleStream(out)), "json").deliver(page(), no_pause)

    record, event = out.getvalue().splitlines()
    assert json.loads(record)["event"]["original"] == LINE
    assert event == EVENT
