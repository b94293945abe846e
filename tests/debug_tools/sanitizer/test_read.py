"""msSanitizer reports and msaicerr folders: every record kind read with its fields, the doc's
samples, interleaved output, CRLF, a report cut short, and the fields of a log event."""

from __future__ import annotations

import re
from pathlib import Path

from npuwatch.debug_tools.sanitizer.read import parse_sanitizer_text, read_sanitizer_report
from npuwatch.debug_tools.sanitizer.read_events import event_fields
from npuwatch.debug_tools.sanitizer.read_msaicerr import (
    is_msaicerr_output,
    parse_info_text,
    read_msaicerr_output,
)
from npuwatch.debug_tools.sanitizer.read_records import SanitizerRecord
from tests import formats_doc
from tests.conftest import FIXTURES

SANITIZER = FIXTURES / "debug_tools" / "sanitizer"
INFO = SANITIZER / "msaicerr_out" / "info_20260415111938"
FORMATS_DOC = formats_doc.FORMATS / "sanitizer.md"


def records(name: str) -> list[SanitizerRecord]:
    report = read_sanitizer_report(SANITIZER / name, name)
    return report.records


def by_kind(name: str) -> dict[str, list[SanitizerRecord]]:
    found: dict[str, list[SanitizerRecord]] = {}
    for record in records(name):
        found.setdefault(record.kind, []).append(record)
    return found


def test_the_memcheck_report_holds_every_memory_record_kind_in_order() -> None:
    assert [(record.line, record.level, record.kind) for record in records("memcheck.log")] == [
        (1, "INFO", "detection_start"),
        (2, "ERROR", "illegal_read"),
        (10, "ERROR", "illegal_write"),
        (18, "ERROR", "illegal_write"),
        (26, "ERROR", "misaligned_access"),
        (30, "ERROR", "uninitialized_read"),
        (35, "WARNING", "out_of_bounds"),
        (40, "ERROR", "illegal_free"),
        (44, "ERROR", "memory_leak"),
        (47, "ERROR", "memory_leak"),
        (49, "SUMMARY", "leak_summary"),
        (50, "WARNING", "unused_memory"),
        (53, "SUMMARY", "unused_summary"),
        (54, "ERROR", "internal_error"),
    ]
    assert read_sanitizer_report(SANITIZER / "memcheck.log").problems == []


def test_an_illegal_read_has_its_size_address_space_block_pc_and_stack() -> None:
    read = by_kind("memcheck.log")["illegal_read"][0]
    assert (read.size_bytes, read.address, read.memory_space, read.access) == (
        224,
        "0x12c0c0015000",
        "GM",
        "read",
    )
    assert (read.kernel, read.block, read.device, read.thread) == (
        "add_custom_kernel",
        "aiv(0)",
        0,
        None,
    )
    assert (read.pc, read.serial_no, read.code_file) == ("0x77c", 10, None)
    assert [(frame.index, frame.line, frame.column) for frame in read.frames] == [
        (0, 58, 9),
        (1, 58, 9),
        (2, 443, 5),
        (3, 18, 5),
    ]
    assert read.frames[3].file == "illegal_read_and_write/add_custom.cpp"
    assert [number for number, _ in read.lines] == list(range(2, 10))
    assert read.lines[0][1] == "====== ERROR: illegal read of size 224"


def test_writes_misaligned_uninitialized_and_out_of_bounds_keep_their_own_details() -> None:
    kinds = by_kind("memcheck.log")
    writes = kinds["illegal_write"]
    assert [(w.access, w.block, w.serial_no) for w in writes] == [
        ("write", "aiv(0)", 12),
        ("write", "aiv(1)", 13),
    ]
    misaligned = kinds["misaligned_access"][0]
    assert (misaligned.memory_space, misaligned.code_file, misaligned.code_line) == (
        "UB",
        "add_custom.cpp",
        31,
    )
    assert (misaligned.pc, misaligned.serial_no, misaligned.frames) == (None, 20, ())
    uninitialized = kinds["uninitialized_read"][0]
    assert (uninitialized.block, uninitialized.device, uninitialized.size_bytes) == (
        "aic(0)",
        1,
        64,
    )
    bounds = kinds["out_of_bounds"][0]
    assert (bounds.level, bounds.access, bounds.kernel, bounds.block, bounds.size_bytes) == (
        "WARNING",
        "write",
        "matmul_custom_kernel",
        "aiv(0-1),aic(0)",
        128,
    )


def test_illegal_free_leaks_unused_memory_and_internal_errors() -> None:
    kinds = by_kind("memcheck.log")
    free = kinds["illegal_free"][0]
    assert (free.address, free.memory_space, free.code_file, free.code_line, free.serial_no) == (
        "0x124080015000",
        "GM",
        "main.cpp",
        88,
        41,
    )
    own_line, same_line = kinds["memory_leak"]
    assert (own_line.size_bytes, own_line.address, own_line.module_id) == (
        100,
        "0x124080013000",
        3,
    )
    assert (own_line.code_file, own_line.code_line, own_line.serial_no) == (
        "add_custom.cpp",
        14,
        37,
    )
    assert (same_line.size_bytes, same_line.module_id, same_line.code_line) == (1000, None, 15)
    assert same_line.serial_no == 55
    summary = kinds["leak_summary"][0]
    assert (summary.size_bytes, summary.count) == (1100, 2)
    unused = kinds["unused_memory"][0]
    assert (unused.size_bytes, unused.code_file, unused.code_line) == (4096, "main.cpp", 52)
    assert (kinds["unused_summary"][0].size_bytes, kinds["unused_summary"][0].count) == (4096, 1)
    assert kinds["internal_error"][0].serial_no == 58
    assert kinds["detection_start"][0].count == 2


def test_a_race_has_its_hazard_space_kernel_and_two_pipe_events_with_stacks() -> None:
    raw, waw, war = records("racecheck.log")[1:]
    assert (raw.kind, raw.memory_space, raw.kernel, raw.device) == (
        "raw_hazard",
        "GM",
        "kernel_float",
        0,
    )
    first, second = raw.events
    assert (first.pipe, first.access, first.address, first.block, first.pc, first.serial_no) == (
        "PIPE_MTE2",
        "write",
        "RAW()+0x0",
        "0 (aiv)",
        "0xa98",
        14,
    )
    assert [frame.line for frame in first.frames] == [58, 58, 443, 17]
    assert (second.pipe, second.access, second.pc) == ("PIPE_MTE3", "read", "0xad4")
    assert [frame.line for frame in second.frames] == [112, 21]
    assert (waw.kind, waw.memory_space, [event.pipe for event in waw.events]) == (
        "waw_hazard",
        "UB",
        ["PIPE_V", "PIPE_MTE2"],
    )
    assert (war.kind, war.kernel, [event.thread for event in war.events]) == (
        "war_hazard",
        "simt_kernel",
        ["(0,0,0)", "(1,0,0)"],
    )


def test_sync_warnings_name_their_pipes_and_the_register_warning_its_values() -> None:
    unpaired, redundant, register = records("synccheck.log")[1:]
    assert (unpaired.kind, unpaired.from_pipe, unpaired.to_pipe, unpaired.kernel) == (
        "unpaired_set_flag",
        "PIPE_S",
        "PIPE_MTE3",
        "add_custom_kernel",
    )
    assert (unpaired.block, unpaired.device, unpaired.pc, len(unpaired.frames)) == (
        "aiv(0)",
        1,
        "0x2c94",
        2,
    )
    assert (redundant.kind, redundant.from_pipe, redundant.to_pipe) == (
        "redundant_wait_flag",
        "PIPE_MTE2",
        "PIPE_V",
    )
    assert (register.level, register.kind, register.register, register.block) == (
        "WARNING",
        "register_not_reset",
        "CTRL",
        "aiv(0)",
    )
    assert (register.kernel, register.expected_value, register.current_value) == (
        "add_custom_kernel",
        "0x0",
        "0x8",
    )


def test_a_simt_record_has_its_thread() -> None:
    read = records("simt.log")[1]
    assert (read.thread, read.block, read.kernel, read.size_bytes) == (
        "(1,0,0)",
        "aiv(0-1)",
        "vec_add",
        4,
    )


def test_a_pasted_report_with_crlf_and_the_apps_own_lines_reads_whole() -> None:
    report = read_sanitizer_report(SANITIZER / "pasted_crlf.log", "pasted")
    assert report.problems == []
    banner, write = report.records
    assert (banner.line, write.line, write.kind, write.device, write.block) == (
        2,
        4,
        "illegal_write",
        2,
        "aiv(7)",
    )
    # Line 6 is the application's print inside the record: not one of the record's lines.
    assert [number for number, _ in write.lines] == [4, 5, 7, 8, 9, 10, 11, 12]
    assert not any(text.endswith("\r") for _, text in write.lines)
    assert len(write.frames) == 4


def test_a_report_cut_short_keeps_its_last_record_as_incomplete_and_says_so() -> None:
    report = read_sanitizer_report(SANITIZER / "truncated.log", "truncated.log")
    assert [(record.kind, record.complete) for record in report.records[1:]] == [
        ("illegal_read", True),
        ("illegal_write", False),
    ]
    assert report.records[2].address == "0x12c0c0016000"
    assert report.problems == [
        "truncated.log:9: unrecognised line in a record: in blo",
        "truncated.log:7: illegal_write record without the code location, the block line "
        "(the report ends inside it); kept as incomplete",
    ]


def test_the_formats_doc_samples_parse_once_their_annotations_are_removed() -> None:
    samples = [
        "\n".join(re.sub(r"\s+//.*$", "", line) for line in lines)
        for section, lines in formats_doc.fenced_blocks(FORMATS_DOC)
        if section == "1.3"
    ]
    kinds = [
        [record.kind for record in parse_sanitizer_text(text, "doc").records] for text in samples
    ]
    assert kinds == [
        ["illegal_read"],
        ["memory_leak", "memory_leak", "leak_summary"],
        ["illegal_read"],
        ["raw_hazard"],
        ["unpaired_set_flag"],
    ]
    leaks = parse_sanitizer_text(samples[1], "doc").records
    assert [(leak.code_file, leak.code_line, leak.serial_no) for leak in leaks[:2]] == [
        ("add_custom.cpp", 14, 37),
        ("add_custom.cpp", 15, 55),
    ]


def test_a_leak_header_without_entries_and_lines_outside_records_are_problems() -> None:
    text = "====== ERROR: LeakCheck: detected memory leaks\n======    stray detail\n"
    report = parse_sanitizer_text(text, "x.log")
    assert report.records == []
    assert report.problems == [
        "x.log:2: report line outside any record: stray detail",
        "x.log:1: LeakCheck header without any leak entry",
    ]


def test_an_unknown_message_is_kept_as_an_other_record() -> None:
    (record,) = parse_sanitizer_text("====== ERROR: something new\n", "x.log").records
    assert (record.level, record.kind, record.message) == ("ERROR", "other", "something new")


def test_event_fields_give_a_log_event_its_level_kernel_device_message_and_code() -> None:
    write = by_kind("memcheck.log")["illegal_write"][0]
    assert event_fields(write) == {
        "timestamp": None,
        "level": "ERROR",
        "kind": "illegal_write",
        "kernel": "add_custom_kernel",
        "device": 0,
        "message": "illegal write of size 32, at 0x12c0c0016000 on GM, in add_custom_kernel, "
        "block aiv(0), device 0, code illegal_read_and_write/add_custom.cpp:25",
        "source": "memcheck.log",
        "line": 10,
        "code_file": "illegal_read_and_write/add_custom.cpp",
        "code_line": 25,
    }
    internal = event_fields(by_kind("memcheck.log")["internal_error"][0])
    assert (internal["code_file"], internal["code_line"], internal["kernel"]) == (None, None, None)


def test_msaicerr_info_txt_gives_every_section() -> None:
    output = read_msaicerr_output(INFO, "info")
    assert output.problems == []
    (error,) = output.errors
    assert error.folder == "info/aicerror_0_20260415111938"
    assert error.conclusion.startswith("The set_flag and wait_flag instructions")
    assert (error.kernel_name, error.device_id, error.core_id) == (
        "te_add_custom_kernel_0",
        "0",
        "0",
    )
    assert (error.basic["task id"], error.basic["rts_block_dim"]) == ("5", "8")
    assert error.error_code == "0x800000"
    assert error.registers["MTE_ERR_INFO"] == "0x22601000002005d"
    assert (error.start_pc, error.current_pc) == ("0x100040800008", "0x100040800188")
    assert len(error.instructions) == 6 and error.instructions[-1].strip().startswith("*")
    assert error.memory[-1].startswith("args after  execution:")
    assert error.single_op_result == "Single-operator test case failed to be executed."
    assert len(error.sections) == 6


def test_msaicerr_readme_and_debug_log_are_read() -> None:
    output = read_msaicerr_output(INFO)
    (entry,) = output.entries
    assert (entry.folder, entry.error_code, entry.device_id, entry.core_id, entry.task_id) == (
        "aicerror_0_20260415111938",
        "0x800000",
        "0",
        "0",
        "5",
    )
    assert (entry.node, entry.kernel) == ("Add_0", "te_add_custom_kernel_0")
    assert [(line.line, line.level) for line in output.debug] == [(2, "WARNING"), (3, "ERROR")]
    assert output.debug[1].time == "2026-04-15 11:25:09"


def test_an_info_txt_cut_short_names_the_missing_sections(tmp_path: Path) -> None:
    text = (INFO / "aicerror_0_20260415111938" / "info.txt").read_text(encoding="utf-8")
    problems: list[str] = []
    error = parse_info_text(text[: text.index("****************4.")], "e", problems)
    assert problems == ["e/info.txt: sections 4, 5, 6 missing (file cut short?)"]
    assert error.single_op_result is None and error.current_pc == "0x100040800188"


def test_only_info_folders_are_msaicerr_outputs(tmp_path: Path) -> None:
    assert is_msaicerr_output(INFO)
    assert not is_msaicerr_output(INFO.parent)
    empty = tmp_path / "info_1"
    empty.mkdir()
    assert not is_msaicerr_output(empty)
