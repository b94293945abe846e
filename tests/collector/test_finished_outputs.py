"""One tracker of finished outputs, for profiling runs and debugging-tool outputs alike."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from npuwatch.collector.debug_outputs import output_tracker
from npuwatch.collector.finished_outputs import OutputState, signature_of
from npuwatch.collector.profiling_runs import PROFILING, run_tracker

SETTLE = 10.0


def _run(root: Path, name: str) -> Path:
    """A torch_npu run folder with one file."""
    run = root / name / "ASCEND_PROFILER_OUTPUT"
    run.mkdir(parents=True)
    (run / "kernel_details.csv").write_text("Name,Type\n", encoding="utf-8")
    return root / name


def test_an_output_is_ready_once_it_settled_and_not_again_after_it_was_imported(
    tmp_path: Path,
) -> None:
    run = _run(tmp_path / "prof", "job_ascend_pt")
    tracker = run_tracker(tmp_path / "imported.json", SETTLE)
    assert tracker.ready([tmp_path / "prof"], now=100.0) == ([], [])
    ready, gone = tracker.ready([tmp_path / "prof"], now=100.0 + SETTLE)
    assert [(output.kind, output.path) for output, _ in ready] == [(PROFILING, run)] and gone == []
    tracker.done(run, OutputState(PROFILING, ready[0][1]))
    again = run_tracker(tmp_path / "imported.json", SETTLE)  # a restart reads the list
    assert again.ready([tmp_path / "prof"], now=1000.0) == ([], [])


def test_a_run_its_profiler_marked_done_is_ready_without_waiting(tmp_path: Path) -> None:
    run = _run(tmp_path / "prof", "job_ascend_pt")
    (run / "ASCEND_PROFILER_OUTPUT" / "analyse.done").write_text("", encoding="utf-8")
    ready, _ = run_tracker(tmp_path / "imported.json", SETTLE).ready([tmp_path / "prof"], 5.0)
    assert [output.path for output, _ in ready] == [run]


def test_the_profiling_list_of_an_earlier_version_is_read_and_written_in_the_one_format(
    tmp_path: Path,
) -> None:
    run = _run(tmp_path / "prof", "job_ascend_pt")
    signature = signature_of(run)
    assert signature is not None
    state = tmp_path / "profiling-imported.json"
    state.write_text(json.dumps({"version": 1, "runs": {str(run): list(signature)}}))
    tracker = run_tracker(state, SETTLE)
    other = _run(tmp_path / "prof", "other_ascend_pt")
    assert tracker.ready([tmp_path / "prof"], now=1000.0) == ([], [])
    ready, _ = tracker.ready([tmp_path / "prof"], now=1000.0 + SETTLE)
    assert [output.path for output, _ in ready] == [other]  # the earlier run was imported
    tracker.done(other, OutputState(PROFILING, ready[0][1]))
    saved = json.loads(state.read_text(encoding="utf-8"))
    assert sorted(saved["outputs"]) == [str(run), str(other)]
    assert saved["outputs"][str(run)]["signature"] == list(signature)


def test_a_deleted_run_is_dropped_and_a_deleted_debug_output_kept_as_gone(tmp_path: Path) -> None:
    run = _run(tmp_path / "prof", "job_ascend_pt")
    runs = run_tracker(tmp_path / "runs.json", SETTLE)
    runs.done(run, OutputState(PROFILING, signature_of(run)))  # type: ignore[arg-type]
    report = tmp_path / "debug" / "mssanitizer_1.log"
    report.parent.mkdir()
    report.write_text("====== ERROR: illegal read of size 4\n", encoding="utf-8")
    outputs = output_tracker(tmp_path / "outputs.json", SETTLE)
    outputs.done(report, OutputState("sanitizer", signature_of(report)))  # type: ignore[arg-type]
    shutil.rmtree(run)
    report.unlink()
    assert runs.ready([tmp_path / "prof"], now=1.0) == ([], [str(run)])
    assert runs.imported.get(run) is None
    assert outputs.ready([tmp_path / "debug"], now=1.0) == ([], [str(report)])
    kept = outputs.imported.get(report)
    assert kept is not None and kept.present is False and kept.kind == "sanitizer"
