"""`npuwatch grep`: questions to the journal answered like grep (exit 0 found, 1 none, 2 error)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from npuwatch.cli import main
from npuwatch.commands.grep_run import parse_when
from npuwatch.handoff import EventRow
from npuwatch.record_schema import LogRecord
from tests.journal.journal_builder import JournalContents, LogFile, epoch_us, write_journal

PLOG = "/r/debug/plog/plog-3300_20250914093000120.log"
DEVICE_LOG = "/r/debug/device-0/device-3300_20250914093000120.log"
OTHER_PLOG = "/r/debug/plog/plog-4400_20250914093000120.log"
TRAINING_LOG = "/r/train/train.log"

BUILD_START = "[INFO] GE(3300,python3):2025-09-14-09:30:00.000.100 [graph_builder.cc:120]3301 BuildGraph: start building graph resnet50"
SLOW_SYNC = "[WARNING] RUNTIME(3300,python3):2025-09-14-09:30:01.000.200 [stream.cc:88]3302 StreamSync: sync took 1200 ms"
TIMEOUT = "[ERROR] HCCL(3300,python3):2025-09-14-09:30:02.402.855 [task_exception_handler.cc:947] [3303]notify wait timeout, error code E30009"
TIMEOUT_DETAIL = "    rank 2 waited for rank 5"
BUILD_DONE = "[INFO] GE(3300,python3):2025-09-14-09:30:03.000.000 [graph_builder.cc:180]3301 BuildGraph: done"
LINK_DOWN = "[ERROR] IMP(3300,python3):2025-09-14-09:30:04.000.000 12 (device_id:3 die_id:0) [IMP] link status down, EI0002 raised"
AICORE = "[ERROR] RUNTIME(3300,python3):2025-09-14-09:30:05.000.000 [task.cc:55]3310 TaskFail: aicore error on stream 3, error code EL0004"
DUMP = "[INFO] RUNTIME(3300,python3):2025-09-14-09:30:06.000.000 [task.cc:60]3310 TaskFail: dump written"
TWO_CODES = "[ERROR] GE(4400,python3):2025-09-14-09:30:07.000.000 [error_manager.cc:254]4401 ReportInterErrMessage: error_code:E19999 and EI0001 both"
DEBUG_DETAIL = (
    "[DEBUG] GE(4400,python3):2025-09-14-09:30:08.000.000 [graph.cc:1]4401 Func: debug detail"
)
RANK_FAILED = "2025-09-14 09:30:09,218 - lmdeploy - ERROR - model_agent.py:489 - Rank[2] failed."


def journal_files() -> list[LogFile]:
    return [
        LogFile(
            PLOG, "node-7", [BUILD_START, SLOW_SYNC, TIMEOUT, TIMEOUT_DETAIL, BUILD_DONE, LINK_DOWN]
        ),
        LogFile(DEVICE_LOG, "node-7", [AICORE, DUMP]),
        LogFile(OTHER_PLOG, "node-8", [TWO_CODES, DEBUG_DETAIL]),
        LogFile(TRAINING_LOG, "node-8", [RANK_FAILED]),
    ]


@pytest.fixture
def journal(tmp_path: Path) -> tuple[Path, JournalContents]:
    directory = tmp_path / "journal"
    return directory, write_journal(directory, journal_files())


@pytest.fixture
def journal_dir(journal: tuple[Path, JournalContents]) -> Path:
    return journal[0]


def grep(journal_dir: Path, *args: str) -> int:
    """Run `npuwatch grep --journal DIR ARGS...`; its exit status."""
    try:
        return main(["grep", "--journal", str(journal_dir), *args])
    except SystemExit as stop:
        return int(stop.code or 0)


def lines(path: str, *texts: str, separator: str = ":") -> list[str]:
    return [f"{path}{separator}{text}" for text in texts]


def out(capsys: pytest.CaptureFixture[str]) -> list[str]:
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out.splitlines()


# --- what is printed for a match -------------------------------------------------------------


def test_a_pattern_prints_every_line_of_a_matching_record_after_its_file(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert grep(journal_dir, "wait timeout") == 0
    assert out(capsys) == lines(PLOG, TIMEOUT, TIMEOUT_DETAIL)


def test_a_level_prints_its_records_in_journal_order(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert grep(journal_dir, "--level", "error") == 0
    assert out(capsys) == [
        *lines(PLOG, TIMEOUT, TIMEOUT_DETAIL, LINK_DOWN),
        *lines(DEVICE_LOG, AICORE),
        *lines(OTHER_PLOG, TWO_CODES),
        *lines(TRAINING_LOG, RANK_FAILED),
    ]


def test_levels_are_given_as_a_list(journal_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert grep(journal_dir, "--level", "WARNING,DEBUG") == 0
    assert out(capsys) == [*lines(PLOG, SLOW_SYNC), *lines(OTHER_PLOG, DEBUG_DETAIL)]


def test_a_code_finds_records_that_carry_it_second(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert grep(journal_dir, "--code", "EI0001,E30009") == 0
    assert out(capsys) == [*lines(PLOG, TIMEOUT, TIMEOUT_DETAIL), *lines(OTHER_PLOG, TWO_CODES)]


def test_a_cann_module_is_found_in_any_case(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert grep(journal_dir, "--module", "runtime") == 0
    assert out(capsys) == [*lines(PLOG, SLOW_SYNC), *lines(DEVICE_LOG, AICORE, DUMP)]


def test_a_python_logger_is_found_as_written(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert grep(journal_dir, "--module", "lmdeploy") == 0
    assert out(capsys) == lines(TRAINING_LOG, RANK_FAILED)


def test_a_device_finds_the_plog_records_whose_body_names_it(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert grep(journal_dir, "--device", "3") == 0
    assert out(capsys) == lines(PLOG, LINK_DOWN)


def test_a_device_finds_the_records_whose_message_names_it_in_the_runtime_s_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, only the `(device_id:N die_id:N)` style gave a plog record its device: the
    runtime's `Task run failed, device_id=3, …` and `deviceId=3` lines had none, and
    `grep --level ERROR --device 3` missed most of a device's errors."""
    task = (
        "[ERROR] RUNTIME(3300,python3):2025-09-14-09:30:05.000.000 [stars_engine.cc:1553]3310 "
        "ProcLogicCqReport:Task run failed, device_id=3, stream_id=2, task_id=1"
    )
    memory = (
        "[ERROR] RUNTIME(3300,python3):2025-09-14-09:30:06.000.000 [npu_driver.cc:566]3310 "
        "DevMemAlloc huge page failed: deviceId=3, type=2, size=1024"
    )
    other = (
        "[ERROR] RUNTIME(3300,python3):2025-09-14-09:30:07.000.000 [stream.cc:921]3310 "
        "GetError:Notify wait execute failed, device_id=1, stream_id=14"
    )
    directory = tmp_path / "journal"
    write_journal(directory, [LogFile(PLOG, "node-7", [BUILD_START, task, memory, other])])
    assert grep(directory, "--level", "ERROR", "--device", "3") == 0
    assert out(capsys) == lines(PLOG, task, memory)
    assert grep(directory, "--level", "ERROR", "--device", "3", "--json") == 0
    found = [json.loads(line) for line in out(capsys)]
    assert [document["ascend"]["device"] for document in found] == [3, 3]


def test_a_device_finds_the_errors_of_the_process_whose_hccl_identity_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, the errors of the process on device 3 that do not name a device themselves
    (HCCL's timeouts, `aclrtSynchronizeStream failed`) were not found by `--device 3`."""
    identity = (
        "[INFO] HCCL(3300,python3):2025-09-14-09:30:00.500.000 [op_base.cc:100][3301]"
        "Entry-HcclCommInitRootInfo:ranks[8], rank[2], identifier[10.0.0.1_60000_0_1], "
        "deviceLogicId[3]"
    )
    synchronize = (
        "[ERROR] RUNTIME(3300,python3):2025-09-14-09:30:05.000.000 [stream.cc:100]3310 "
        "aclrtSynchronizeStream failed"
    )
    directory = tmp_path / "journal"
    write_journal(directory, [LogFile(PLOG, "node-7", [identity, TIMEOUT, synchronize])])
    assert grep(directory, "--level", "ERROR", "--device", "3") == 0
    assert out(capsys) == lines(PLOG, TIMEOUT, synchronize)
    assert grep(directory, "--level", "ERROR", "--device", "3", "--json") == 0
    assert [json.loads(line)["ascend"]["device"] for line in out(capsys)] == [3, 3]
    assert grep(directory, "--device", "4", "-c") == 1


def test_fixed_strings_match_a_pattern_s_characters_as_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    brackets = (
        "[ERROR] HCCL(3300,python3):2025-09-14-09:30:05.000.000 [hccl.cc:1]3310 "
        "Init: ranks[0] and ranks[1] disagree (a+b)"
    )
    directory = tmp_path / "journal"
    write_journal(directory, [LogFile(PLOG, "node-7", [BUILD_START, brackets])])
    assert grep(directory, "-F", "ranks[0] and ranks[1]") == 0
    assert out(capsys) == lines(PLOG, brackets)
    assert grep(directory, "--fixed-strings", "(a+b)", "-c") == 0
    assert out(capsys) == ["1"]
    # The same text as a regular expression means something else, and finds nothing.
    assert grep(directory, "ranks[0] and ranks[1]") == 1


def test_a_device_finds_the_records_of_its_device_folder(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert grep(journal_dir, "--device", "0") == 0
    assert out(capsys) == lines(DEVICE_LOG, AICORE, DUMP)


def test_host_and_pid_narrow_to_one_process(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert grep(journal_dir, "--host", "node-8", "--pid", "4400") == 0
    assert out(capsys) == lines(OTHER_PLOG, TWO_CODES, DEBUG_DETAIL)


def test_since_and_until_include_records_at_those_times(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    since, until = "2025-09-14T09:30:04Z", "2025-09-14T09:30:06Z"
    assert grep(journal_dir, "--since", since, "--until", until) == 0
    assert out(capsys) == [*lines(PLOG, LINK_DOWN), *lines(DEVICE_LOG, AICORE, DUMP)]


def test_a_cann_style_time_is_read_in_the_given_zone(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 17:30:07 in Shanghai is 09:30:07 UTC.
    assert grep(journal_dir, "--since", "2025-09-14-17:30:07", "--timezone", "Asia/Shanghai") == 0
    assert out(capsys) == [
        *lines(OTHER_PLOG, TWO_CODES, DEBUG_DETAIL),
        *lines(TRAINING_LOG, RANK_FAILED),
    ]


def test_a_category_finds_the_records_that_triggered_its_events(
    journal: tuple[Path, JournalContents], capsys: pytest.CaptureFixture[str]
) -> None:
    directory, contents = journal
    assert {row.path for row in contents.events if row.category == "timeout"} == {PLOG}
    assert grep(directory, "--category", "timeout") == 0
    assert out(capsys) == lines(PLOG, TIMEOUT, TIMEOUT_DETAIL)


def test_ignore_case_applies_to_the_pattern(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert grep(journal_dir, "-i", "LINK STATUS") == 0
    assert out(capsys) == lines(PLOG, LINK_DOWN)


def test_no_filename_prints_the_lines_alone(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert grep(journal_dir, "--no-filename", "--code", "E30009") == 0
    assert out(capsys) == [TIMEOUT, TIMEOUT_DETAIL]


# --- context ----------------------------------------------------------------------------------


def test_context_lines_have_a_dash_and_groups_are_separated(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert grep(journal_dir, "-C", "1", "resnet50|link status|aicore") == 0
    assert out(capsys) == [
        *lines(PLOG, BUILD_START),
        *lines(PLOG, SLOW_SYNC, separator="-"),
        "--",
        *lines(PLOG, BUILD_DONE, separator="-"),
        *lines(PLOG, LINK_DOWN),
        "--",
        *lines(DEVICE_LOG, AICORE),
        *lines(DEVICE_LOG, DUMP, separator="-"),
    ]


def test_context_never_reaches_into_another_file(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert grep(journal_dir, "-C", "3", "--host", "node-8", "--level", "ERROR") == 0
    assert out(capsys) == [
        *lines(OTHER_PLOG, TWO_CODES),
        *lines(OTHER_PLOG, DEBUG_DETAIL, separator="-"),
        "--",
        *lines(TRAINING_LOG, RANK_FAILED),
    ]


def test_groups_that_overlap_or_touch_print_each_line_once_and_hits_as_hits(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert grep(journal_dir, "-C", "1", "--host", "node-7", "--level", "WARNING,ERROR") == 0
    assert out(capsys) == [
        *lines(PLOG, BUILD_START, separator="-"),
        *lines(PLOG, SLOW_SYNC, TIMEOUT, TIMEOUT_DETAIL),
        *lines(PLOG, BUILD_DONE, separator="-"),
        *lines(PLOG, LINK_DOWN),
        "--",
        *lines(DEVICE_LOG, AICORE),
        *lines(DEVICE_LOG, DUMP, separator="-"),
    ]


# --- JSON, counts, limits -------------------------------------------------------------------


@pytest.mark.parametrize(
    "question", [["--code", "E30009"], ["notify wait"]], ids=["index", "blocks"]
)
def test_json_documents_follow_the_record_schema_and_keep_the_stored_fields(
    journal_dir: Path, capsys: pytest.CaptureFixture[str], question: list[str]
) -> None:
    assert grep(journal_dir, "--json", *question) == 0
    (line,) = out(capsys)
    document = json.loads(line)
    LogRecord.model_validate(document)
    assert document["@timestamp"] == "2025-09-14T09:30:02.402855Z"
    assert document["log"]["level"] == "ERROR"
    assert document["log"]["logger"] == "HCCL"
    assert document["log"]["file"]["path"] == PLOG
    assert document["error"]["code"] == "E30009"
    assert document["host"]["name"] == "node-7"
    assert document["process"]["pid"] == 3300
    assert document["event"]["original"] == f"{TIMEOUT}\n{TIMEOUT_DETAIL}"


def json_documents(
    journal_dir: Path, capsys: pytest.CaptureFixture[str], *args: str
) -> list[dict[str, Any]]:
    assert grep(journal_dir, "--json", *args) == 0
    return [json.loads(line) for line in out(capsys)]


def test_json_documents_are_the_same_whichever_plan_found_the_records(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from_index = json_documents(journal_dir, capsys, "--level", "ERROR")
    from_blocks = json_documents(journal_dir, capsys, "--level", "ERROR,INFO")
    assert from_index == [d for d in from_blocks if d["log"]["level"] == "ERROR"]
    assert from_index[0]["ascend"]["end_offset"] == len(
        f"{BUILD_START}\n{SLOW_SYNC}\n{TIMEOUT}\n{TIMEOUT_DETAIL}\n"
    )


def test_json_of_an_indexed_record_keeps_its_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long_line = f"{TIMEOUT} {'x' * 70_000}"
    write_journal(tmp_path, [LogFile(PLOG, "node-7", [BUILD_START, long_line])])
    (document,) = json_documents(tmp_path, capsys, "--code", "E30009")
    LogRecord.model_validate(document)
    assert document["ascend"]["flags"] == ["truncated"]


def test_json_of_a_python_log_record_follows_the_schema(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert grep(journal_dir, "--json", "--module", "lmdeploy") == 0
    (line,) = out(capsys)
    document = LogRecord.model_validate(json.loads(line))
    assert document.host is not None and document.host.name == "node-8"
    assert document.log.logger == "lmdeploy"


def test_count_prints_how_many_records_matched(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert grep(journal_dir, "-c", "--level", "ERROR") == 0
    assert out(capsys) == ["5"]


def test_a_count_of_nothing_is_zero_and_exit_1(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert grep(journal_dir, "-c", "--level", "FATAL") == 1
    assert out(capsys) == ["0"]


def test_max_count_stops_after_that_many_records(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert grep(journal_dir, "-m", "2", "--level", "ERROR") == 0
    assert out(capsys) == lines(PLOG, TIMEOUT, TIMEOUT_DETAIL, LINK_DOWN)


def test_nothing_matched_prints_nothing_and_exits_1(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert grep(journal_dir, "no such words in any record") == 1
    assert out(capsys) == []


# --- events -----------------------------------------------------------------------------------


def event_lines_start_and_end(rows: list[EventRow]) -> list[tuple[str, str]]:
    return [(f"EVENT {row.severity} {row.rule} ", f" ({row.path})") for row in rows]


def test_events_print_one_line_each_with_severity_rule_and_file(
    journal: tuple[Path, JournalContents], capsys: pytest.CaptureFixture[str]
) -> None:
    directory, contents = journal
    assert grep(directory, "--events") == 0
    printed = out(capsys)
    assert len(printed) == len(contents.events) >= 4
    for line, (start, end) in zip(printed, event_lines_start_and_end(contents.events), strict=True):
        assert line.startswith(start) and line.endswith(end)


def test_events_of_a_category_print_as_json_documents(
    journal: tuple[Path, JournalContents], capsys: pytest.CaptureFixture[str]
) -> None:
    directory, contents = journal
    assert grep(directory, "--events", "--json", "--category", "timeout,memory") == 0
    documents = [json.loads(line) for line in out(capsys)]
    wanted = [row for row in contents.events if row.category in {"timeout", "memory"}]
    assert [d["rule"]["id"] for d in documents] == [row.rule for row in wanted]
    assert {d["rule"]["category"] for d in documents} == {"timeout", "memory"}
    for document in documents:
        LogRecord.model_validate(document)
        assert document["event"]["kind"] == "alert"


def test_events_can_be_counted(
    journal: tuple[Path, JournalContents], capsys: pytest.CaptureFixture[str]
) -> None:
    directory, contents = journal
    assert grep(directory, "--events", "-c") == 0
    assert out(capsys) == [str(len(contents.events))]


def test_no_matching_event_exits_1(journal_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert grep(journal_dir, "--events", "--category", "no-such-category") == 1
    assert out(capsys) == []


def test_the_agent_s_state_directory_finds_the_journal_inside_it(
    journal_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--state-directory` is what the agent was given, so it is what users type here too."""
    state_directory = journal_dir.parent
    assert grep(journal_dir, "--level", "ERROR") == 0
    from_journal = out(capsys)
    assert grep(state_directory, "--level", "ERROR") == 0
    assert out(capsys) == from_journal
    assert len(from_journal) == 6  # five ERROR records, one of two lines


# --- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--level", "ERROR"], "no journal at"),
        (["("], "PATTERN is not a regular expression"),
        (["--since", "the day before yesterday"], "cannot read the time"),
        (["--since", "1h", "--timezone", "Mars/Olympus_Mons"], "unknown time zone"),
    ],
    ids=["missing journal", "bad regex", "bad since", "unknown zone"],
)
def test_usage_and_input_errors_are_one_line_and_exit_2(
    tmp_path: Path,
    journal_dir: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    says: str,
) -> None:
    directory = tmp_path / "no-journal" if says == "no journal at" else journal_dir
    assert grep(directory, *args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"npuwatch: {says}")
    assert captured.err.count("\n") == 1 and captured.err.endswith("\n")


# --- times --------------------------------------------------------------------------------------

NOW_S = 1_757_842_200.0  # 2025-09-14 09:30:00 UTC
NOW_US = 1_757_842_200_000_000
SHANGHAI = ZoneInfo("Asia/Shanghai")


@pytest.mark.parametrize(
    ("text", "back_s"),
    [("now", 0), ("30m", 1800), ("1h", 3600), ("1h30m", 5400), ("2d", 172_800)],
)
def test_a_duration_is_that_long_before_now(text: str, back_s: int) -> None:
    assert parse_when(text, NOW_S, None) == NOW_US - back_s * 1_000_000


@pytest.mark.parametrize(
    "text",
    [
        "2025-09-14T09:30:00Z",
        "2025-09-14T09:30:00z",
        "2025-09-14T17:30:00+08:00",
        "2025-09-14 04:30:00-05:00",
        "2025-09-14T09:30:00.000000Z",
    ],
)
def test_a_time_with_its_own_zone_ignores_the_given_zone(text: str) -> None:
    assert parse_when(text, NOW_S, SHANGHAI) == epoch_us("2025-09-14T09:30:00")


@pytest.mark.parametrize(
    ("text", "zone", "utc"),
    [
        ("2025-09-14 17:30", SHANGHAI, "2025-09-14T09:30:00"),
        ("2025-09-14T17:30:05.250", SHANGHAI, "2025-09-14T09:30:05.250"),
        ("2025-09-14 09:30", ZoneInfo("UTC"), "2025-09-14T09:30:00"),
        ("2025-09-14", SHANGHAI, "2025-09-13T16:00:00"),
        ("2025-09-14-09:30:00", ZoneInfo("UTC"), "2025-09-14T09:30:00"),
        ("2025-09-14-17:30:00", SHANGHAI, "2025-09-14T09:30:00"),
        # Copied from a plog line: milliseconds and microseconds apart.
        ("2025-09-14-17:37:31.402.500", SHANGHAI, "2025-09-14T09:37:31.402500"),
        ("2025-09-14-09:37:31.402", ZoneInfo("UTC"), "2025-09-14T09:37:31.402"),
    ],
)
def test_a_time_without_a_zone_is_read_in_the_given_zone(
    text: str, zone: ZoneInfo, utc: str
) -> None:
    assert parse_when(text, NOW_S, zone) == epoch_us(utc)


def test_text_that_is_no_time_says_what_would_be() -> None:
    with pytest.raises(ValueError, match=r"a duration back from now \(30m, 1h, 2d\)"):
        parse_when("yesterday", NOW_S, None)


# --- the fast path ------------------------------------------------------------------------------


HEAVY_MODULES = (
    "pydantic",
    "npuwatch.parsers.stream",
    "dataclasses",
    "pathlib",
    "zstandard",
    "json",
    "logging",
    "zoneinfo",
    "decimal",
)
"""What `grep` must not import to answer from the index (see docs/adr/0002-grep-start-up.md)."""


def test_an_indexed_question_loads_none_of_the_heavy_modules(journal_dir: Path) -> None:
    # Whatever the interpreter's own site hooks already import (a .pth file on
    # some machines pulls in pathlib) is not npuwatch's cost.
    code = (
        "import sys\n"
        "preloaded = set(sys.modules)\n"
        "from npuwatch.cli import main\n"
        f"assert main(['grep', '--journal', {str(journal_dir)!r}, '--level', 'ERROR',\n"
        "             '--code', 'E30009', '--since', '2025-09-14 09:00', '--timezone', 'UTC']) == 0\n"
        f"loaded = [m for m in {HEAVY_MODULES!r} if m in sys.modules and m not in preloaded]\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"{PLOG}:{TIMEOUT}"
