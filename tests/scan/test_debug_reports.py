"""`scan` of a tree that holds msSanitizer reports and msaicerr folders beside the CANN logs:
their findings are counted, listed and matched by the rules like log records, and a report's
lines are not read as log lines."""

from __future__ import annotations

import shutil
from pathlib import Path

from npuwatch.debug_tools.sanitizer.read import read_sanitizer_report
from npuwatch.rules.engine import RuleEngine
from npuwatch.rules.loader import default_locations, load_rules
from npuwatch.scan.aggregate import ScanResult
from npuwatch.scan.text import render_scan
from npuwatch.scan.tree import scan_tree
from npuwatch.terminal import Palette
from tests.conftest import FIXTURES, utc_clock
from tests.npuwatch_command import run_npuwatch

SANITIZER = FIXTURES / "debug_tools" / "sanitizer"
MSAICERR = SANITIZER / "msaicerr_out" / "info_20260415111938"
PLOG_LINE = (
    "[ERROR] GE(4242,python3):2026-04-15-11:19:38.491.647 [graph.cc:12]4242 "
    "E19999: Inner Error! kernel launch failed\n"
)


def job_tree(root: Path) -> Path:
    """A job's log tree: one plog with an ERROR, an msSanitizer report and an msaicerr folder."""
    plog = root / "debug" / "plog" / "plog-4242_20260415111900000.log"
    plog.parent.mkdir(parents=True)
    plog.write_text(PLOG_LINE, encoding="utf-8")
    reports = root / "mindstudio_sanitizer_log"
    reports.mkdir()
    shutil.copy(SANITIZER / "memcheck.log", reports / "mssanitizer_20260415111938_4242.log")
    shutil.copytree(MSAICERR, root / "msaicerr" / MSAICERR.name)
    return root


def scan_with_rules(root: Path) -> ScanResult:
    return scan_tree(root, utc_clock(), engine=RuleEngine(load_rules(default_locations())))


def findings_of_report(path: Path) -> int:
    """The errors and warnings of an msSanitizer report (banner and summary lines left out)."""
    report = read_sanitizer_report(path, path.name)
    return sum(record.level in ("ERROR", "WARNING") for record in report.records)


def test_the_reports_findings_are_records_of_the_scan_beside_the_logs(tmp_path: Path) -> None:
    root = job_tree(tmp_path)
    expected = findings_of_report(SANITIZER / "memcheck.log")
    result = scan_with_rules(root)
    assert result.kinds["debug"] == expected + 1  # + the AI Core error msaicerr analysed
    assert result.modules["SANITIZER"] == expected + 1
    assert result.modules["GE"] == 1
    assert "other" not in result.kinds  # the report's lines were not read as log lines
    assert result.files == 3
    paths = {error.path: error.line_number for error in result.first_errors}
    report = str(root / "mindstudio_sanitizer_log" / "mssanitizer_20260415111938_4242.log")
    assert paths[report] == 2  # the first error record of memcheck.log starts on its line 2
    assert str(root / "msaicerr" / MSAICERR.name) in paths


def test_the_rules_turn_the_findings_into_events_with_advice(tmp_path: Path) -> None:
    result = scan_with_rules(job_tree(tmp_path))
    counts: dict[str, int] = {}
    for event in result.events:  # an event stands for its repeats within the dedupe window
        counts[event.rule.id] = counts.get(event.rule.id, 0) + event.count
    report = read_sanitizer_report(SANITIZER / "memcheck.log", "memcheck.log")
    illegal = sum(
        record.kind in ("illegal_read", "illegal_write", "out_of_bounds", "misaligned_access")
        for record in report.records
    )
    assert counts["debug.sanitizer-illegal-access"] == illegal
    assert counts["debug.msaicerr-aicore-error"] == 1
    assert "E19999" in {code for event in result.events for code in event.error_codes}
    text = render_scan(result, utc_clock().zone, Palette(False))
    assert "Illegal memory access in a kernel (msSanitizer)" in text
    assert "AI Core error analysed by msaicerr" in text


def test_a_single_report_given_to_scan_is_read_as_a_report(tmp_path: Path) -> None:
    report = tmp_path / "memcheck.log"
    shutil.copy(SANITIZER / "memcheck.log", report)
    result = scan_tree(report, utc_clock())
    assert result.kinds == {"debug": findings_of_report(report)}


def test_a_log_that_only_mentions_the_markers_later_is_still_a_log(tmp_path: Path) -> None:
    plog = tmp_path / "plog-1_20260415111900000.log"
    plog.write_text(PLOG_LINE * 200 + "====== ERROR: illegal read of size 4\n", encoding="utf-8")
    result = scan_tree(tmp_path, utc_clock())
    assert "debug" not in result.kinds
    assert result.modules["GE"] == 200


def test_a_report_of_markers_alone_is_read_as_a_log_and_counted_once(tmp_path: Path) -> None:
    # A clean run's banner, or a log that holds nothing but the tool's markers: no finding to
    # fold in, so the file is the log it also is (found by the tree fuzzer: it was not counted).
    (tmp_path / "plog-4100_20250914093300120.log").write_bytes(b"")
    markers = tmp_path / "plog-4242_20250914093300120.log"
    markers.write_bytes(b"[mssanitizer]\n")
    result = scan_tree(tmp_path, utc_clock())
    assert (result.files, result.bytes, result.lines) == (2, markers.stat().st_size, 1)


def test_scan_command_reports_the_kernel_errors_and_exits_1(tmp_path: Path) -> None:
    root = job_tree(tmp_path)
    done = run_npuwatch("scan", str(root))
    assert done.returncode == 1, done.stderr
    assert "Illegal memory access in a kernel (msSanitizer)" in done.stdout
    assert "mssanitizer_20260415111938_4242.log:2" in done.stdout
