"""The sanitizer summary: groups by kind and kernel, leak totals, advice, AI Core errors, and
what counts as a finding (errors yes, warnings alone no)."""

from __future__ import annotations

from pathlib import Path

from npuwatch.debug_tools.sanitizer.advice import advice_for, aicerr_advice
from npuwatch.debug_tools.sanitizer.sources import read_sanitizer_inputs
from npuwatch.debug_tools.sanitizer.summary import SanitizerSummary, summarise_sanitizer
from npuwatch.debug_tools.sanitizer.text import kind_title
from tests.conftest import FIXTURES

SANITIZER = FIXTURES / "debug_tools" / "sanitizer"


def summary_of(path: Path, top: int = 20) -> SanitizerSummary:
    inputs = read_sanitizer_inputs(path)
    return summarise_sanitizer(
        inputs.reports, inputs.msaicerr, root=str(path), top=top, problems=inputs.problems
    )


def test_the_folder_search_finds_every_report_and_the_msaicerr_folder() -> None:
    inputs = read_sanitizer_inputs(SANITIZER)
    assert [report.source for report in inputs.reports] == [
        "memcheck.log",
        "pasted_crlf.log",
        "racecheck.log",
        "simt.log",
        "synccheck.log",
        "truncated.log",
        "mindstudio_sanitizer_log/mssanitizer_20260415111938_4242.log",
    ]
    assert [output.folder for output in inputs.msaicerr] == ["msaicerr_out/info_20260415111938"]


def test_records_group_by_level_kind_and_kernel_most_frequent_errors_first() -> None:
    summary = summary_of(SANITIZER)
    assert (summary.errors, summary.warnings, summary.groups_total) == (16, 5, 16)
    heads = [(g.level, g.kind, g.kernel, g.count) for g in summary.groups[:3]]
    assert heads == [
        ("ERROR", "illegal_write", "add_custom_kernel", 4),
        ("ERROR", "illegal_read", "add_custom_kernel", 2),
        ("ERROR", "memory_leak", None, 2),
    ]
    writes = summary.groups[0]
    assert (writes.devices, writes.blocks, writes.total_bytes) == (
        [0, 2],
        ["aiv(0)", "aiv(1)", "aiv(7)"],
        32 + 32 + 32 + 512,
    )
    assert writes.first_at == "memcheck.log:10"
    assert writes.code == "illegal_read_and_write/add_custom.cpp:25"
    assert writes.stack[0] == "pc 0x7a0 (serialNo:12)"
    assert writes.stack[-1].endswith("add_custom.cpp:25:5   <- kernel source")
    assert "DataCopy length/offset" in writes.advice
    levels = [group.level for group in summary.groups]
    assert levels == sorted(levels)  # every ERROR group before the WARNING ones


def test_a_race_group_shows_both_pipe_events_and_the_barrier_advice() -> None:
    summary = summary_of(SANITIZER / "racecheck.log")
    raw = summary.groups[0]
    assert raw.kind == "raw_hazard" and raw.kernel == "kernel_float"
    assert raw.events == [
        "PIPE_MTE2 write in block 0 (aiv) pc 0xa98 (serialNo:14) at Racecheck/add_custom.cpp:17",
        "PIPE_MTE3 read in block 0 (aiv) pc 0xad4 (serialNo:17) at Racecheck/add_custom.cpp:21",
    ]
    assert "SetFlag/WaitFlag" in raw.advice and "PipeBarrier" in raw.advice


def test_leaks_are_totalled_beside_the_reports_own_summary() -> None:
    leaks = summary_of(SANITIZER / "memcheck.log").leaks
    assert (leaks.count, leaks.bytes, leaks.summary_bytes, leaks.summary_allocations) == (
        2,
        1100,
        1100,
        2,
    )
    assert leaks.allocations[0] == (
        f"100 bytes at 0x124080013000 allocated in add_custom.cpp:14 ({SANITIZER}/memcheck.log:44)"
    )
    assert (leaks.unused_count, leaks.unused_bytes) == (1, 4096)


def test_warnings_alone_are_not_findings_and_errors_are() -> None:
    assert not summary_of(SANITIZER / "synccheck.log").has_findings
    assert summary_of(SANITIZER / "simt.log").has_findings
    clean = summary_of(SANITIZER / "mindstudio_sanitizer_log")
    assert (clean.errors, clean.warnings, clean.has_findings) == (0, 0, False)


def test_an_msaicerr_error_is_a_finding_with_its_conclusion_and_advice() -> None:
    summary = summary_of(SANITIZER / "msaicerr_out")
    (error,) = summary.aicore_errors
    assert summary.has_findings and summary.reports == []
    assert (error.kernel, error.node, error.device, error.core, error.task) == (
        "te_add_custom_kernel_0",
        "Add_0",
        "0",
        "0",
        "5",
    )
    assert (error.error_code, error.current_pc) == ("0x800000", "0x100040800188")
    assert error.faulting_instruction == "* 0x100040800188: BAR PIPE_ALL"
    assert "synccheck" in error.advice
    assert len(summary.msaicerr_log) == 2


def test_a_readme_line_without_its_error_folder_is_still_an_ai_core_error(tmp_path: Path) -> None:
    info = tmp_path / "info_20260101000000"
    info.mkdir()
    (info / "README.txt").write_text(
        "e1   0x4000000000000000   device_id=1   core_id=19   task_id=7   node=Rowmax   "
        "kernel=rowmax_kernel\n",
        encoding="utf-8",
    )
    summary = summary_of(info)
    (error,) = summary.aicore_errors
    assert (error.kernel, error.device, error.core, error.error_code) == (
        "rowmax_kernel",
        "1",
        "19",
        "0x4000000000000000",
    )
    assert error.conclusion.startswith("not analysed by msaicerr")
    assert error.source == f"{info}/README.txt:1"


def test_top_limits_the_groups_but_not_the_counts() -> None:
    summary = summary_of(SANITIZER, top=3)
    assert len(summary.groups) == 3 and summary.groups_total == 16 and summary.errors == 16


def test_advice_differs_for_gm_and_local_memory_and_knows_every_sync_kind() -> None:
    assert "DataCopy" in advice_for("illegal_write", "GM")
    assert "InitBuffer" in advice_for("illegal_write", "UB")
    for kind in ("unpaired_set_flag", "unpaired_wait_flag", "redundant_set_flag"):
        assert "npuwatch does not know" not in advice_for(kind, None)
    assert "npuwatch does not know" in advice_for("other", None)
    assert "memset" in aicerr_advice(
        "The memset or atomic_clean operator is not inserted before this operator in the graph, "
        "while memory cleanup is required before operator execution.",
        None,
    )
    assert "blockDim" in aicerr_advice(
        "The number of AI Cores in the environment is less than that required by the operator.",
        None,
    )


def test_kind_titles_read_as_people_say_them() -> None:
    assert [kind_title(k) for k in ("illegal_write", "raw_hazard", "unpaired_set_flag")] == [
        "illegal write",
        "RAW hazard",
        "unpaired set_flag",
    ]
