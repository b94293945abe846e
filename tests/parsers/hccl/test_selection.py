"""The batch selection picks exactly the records the line-by-line tests would: the keyword
search over the joined texts is a prefilter that never drops a line `may_matter` accepts."""

from __future__ import annotations

import ast
import inspect
from datetime import timezone
from pathlib import Path

import pytest

from npuwatch.parsers.hccl import identity, init_lines, selection
from npuwatch.parsers.stream import StreamParser
from npuwatch.parsers.timestamps import LocalClock
from npuwatch.records import Record
from npuwatch.vocabulary import ERROR_LEVELS

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
GUARDED = {"isten_start", "istenStart", "atch"}
"""Keywords mentions_network tests only inside `if "ocket" in text`: "ocket" covers them."""


def literals_tested_in(function: object) -> set[str]:
    """The string literals of `"…" in text` tests in a function's source."""
    tree = ast.parse(inspect.getsource(function))  # type: ignore[arg-type]
    return {
        node.left.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare)
        and isinstance(node.left, ast.Constant)
        and isinstance(node.left.value, str)
        and any(isinstance(op, ast.In) for op in node.ops)
    }


@pytest.mark.parametrize(
    "function", [identity.mentions_identity, init_lines.mentions_network, selection.may_matter]
)
def test_every_keyword_a_line_is_accepted_by_is_searched_for(function: object) -> None:
    words = selection.MAY_MATTER_WORDS
    missing = [
        literal
        for literal in sorted(literals_tested_in(function))
        if literal not in GUARDED and not any(word in literal for word in words)
    ]
    assert missing == []


def records_of(path: Path) -> list[Record]:
    parser = StreamParser(LocalClock(timezone.utc), path=str(path), host="h")
    return parser.feed(path.read_bytes(), 0) + parser.flush()


def test_the_batch_selection_picks_what_line_by_line_tests_pick_in_every_fixture() -> None:
    files = sorted(FIXTURES.glob("**/plog/*.log"))
    assert len(files) > 100
    for path in files:
        records = records_of(path)
        expected = [
            index
            for index, record in enumerate(records)
            if record.level in ERROR_LEVELS
            or (
                record.logger in selection.WATCHED_LOGGERS
                and record.level != "DEBUG"
                and selection.may_matter(record.original)
            )
        ]
        assert selection.host_positions(records) == expected, path


def hccl_lines(bodies: list[str]) -> list[Record]:
    text = "".join(
        f"[INFO] HCCL(1,p):2026-01-14-09:12:03.{n:06d} [a.cc:1] [1]{body}\n"
        for n, body in enumerate(bodies)
    )
    parser = StreamParser(LocalClock(timezone.utc), path="/x/plog/plog-1_1.log", host="h")
    return parser.feed(text.encode(), 0) + parser.flush()


@pytest.mark.parametrize("filler", [3, 200])
def test_keywords_in_non_ascii_text_map_to_their_record_in_small_and_large_batches(
    filler: int,
) -> None:
    """200 op lines take the batch search, 3 the line-by-line test: both pick the same."""
    bodies = [f"配置 中文 HcclAllReduce op {n} count[1024]" for n in range(filler)]
    bodies[1] = "行 SetupAgent rankNum[8], rank[3]"
    bodies.append("Listen on ip[10.0.0.1], port[1]")
    records = hccl_lines(bodies)
    assert selection.host_positions(records) == [1, len(bodies) - 1]


def test_a_large_batch_most_of_whose_lines_matter_picks_every_one() -> None:
    """A root's list of connected ranks: thousands of lines, every one of them read."""
    bodies = [f"connected rankinfo[LINE {n}]: [{n:016d}];" for n in range(300)]
    assert selection.host_positions(hccl_lines(bodies)) == list(range(300))


def test_a_lone_surrogate_in_a_record_read_back_from_json_does_not_stop_the_batch() -> None:
    parser = StreamParser(LocalClock(timezone.utc), path="/x/plog/plog-1_1.log", host="h")
    line = "[INFO] HCCL(1,p):2026-01-14-09:12:03.000.001 [a.cc:1] [1]x SetupAgent rankNum[8]\n"
    records = parser.feed(line.encode(), 0) + parser.flush()
    records[0].original = "\udc80" + records[0].original
    assert selection.host_positions(records) == [0]
