"""The precision parsers read every variant of the formats doc, and damaged files as problems."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from npuwatch.debug_tools.cell_values import number
from npuwatch.debug_tools.precision.read.acc_check import read_acc_check
from npuwatch.debug_tools.precision.read.compare_json import read_compare_json
from npuwatch.debug_tools.precision.read.compare_merge import read_merge_workbook
from npuwatch.debug_tools.precision.read.compare_rows import rank_of
from npuwatch.debug_tools.precision.read.compare_table import read_compare_table
from npuwatch.debug_tools.precision.read.msit_result import read_msit_result
from npuwatch.debug_tools.precision.read.overflow import read_anomaly_analyze
from tests.conftest import FIXTURES

PRECISION = FIXTURES / "debug_tools" / "precision"


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("N/A", None), ("Nan", None), ("unsupported", None), ("No real data", None),
        ("inf", None), ("-inf", None), ("inf\t", None), ("", None), (None, None),
        ("0.5", 0.5), (0.25, 0.25), ("12.5%", 0.125), (float("nan"), None), (True, None),
    ],
)  # fmt: skip
def test_placeholders_are_no_value_and_percentages_are_fractions(
    cell: object, expected: float | None
) -> None:
    assert number(cell) == expected


def test_the_rank_comes_from_the_file_name_else_0() -> None:
    assert rank_of(Path("compare_result_rank3_20250302.xlsx")) == 3
    assert rank_of(Path("compare_result_rank_12_x.csv")) == 12
    assert rank_of(Path("compare_result_20250302.xlsx")) == 0


def test_a_current_msprobe_xlsx_keeps_execution_order_metrics_and_verdicts() -> None:
    table = read_compare_table(
        PRECISION / "compare_4rank" / "compare_result_rank0_20250302093000.xlsx"
    )
    assert (table.kind, table.rank, len(table.rows), table.problems) == ("tensor", 0, 69, [])
    assert table.verdict_column == "Result"
    assert table.rows[0].name == "Module.embedding.Embedding.forward.0.input.0"
    assert table.rows[1].metrics.keys() == {
        "cosine",
        "max_abs_err",
        "one_thousandth_ratio",
        "five_thousandths_ratio",
    }  # inf and Nan cells dropped
    assert table.rows[2].verdict == "unmatched" and table.rows[2].metrics == {}
    assert [row.verdict for row in table.rows].count("warning") == 1
    assert [row.verdict for row in table.rows].count("error") == 28


def test_a_2023_ptdbg_csv_with_trailing_commas_reads_its_accuracy_column() -> None:
    table = read_compare_table(PRECISION / "ptdbg_2023" / "compare_result_20231216101500.csv")
    assert (table.kind, table.verdict_column, table.problems) == (
        "tensor",
        "Accuracy Reached or Not",
        [],
    )
    assert [row.verdict for row in table.rows] == ["pass"] * 4 + ["error"] * 2
    assert table.rows[4].metrics["cosine"] == 0.962114
    assert table.rows[5].metrics == {}


def test_a_summary_mode_csv_reads_relative_errors_in_percent_as_fractions() -> None:
    table = read_compare_table(PRECISION / "summary" / "compare_result_20250302101500.csv")
    assert table.kind == "summary" and len(table.rows) == 7
    assert table.rows[4].metrics["max_rel_diff"] == pytest.approx(0.126)
    assert table.rows[5].metrics["max_diff"] == 1.83
    assert [row.verdict for row in table.rows][-3:] == ["warning", "error", "error"]


def test_an_md5_csv_has_verdicts_and_no_metrics() -> None:
    table = read_compare_table(PRECISION / "md5" / "compare_result_20250302103000.csv")
    assert table.kind == "md5" and len(table.rows) == 4
    assert {row.verdict for row in table.rows} == {"pass"}
    assert all(row.metrics == {} for row in table.rows)


def test_the_first_mismatch_json_and_diff_analyze_are_read_per_rank() -> None:
    [compare] = read_compare_json(
        PRECISION / "first_mismatch" / "compare_result_rank0_20250302110000.json"
    )
    assert compare.kind == "first_mismatch" and len(compare.rows) == 4
    assert compare.rows[-1].verdict == "error" and compare.rows[-1].metrics["cosine"] == 0.9412
    diff = read_compare_json(PRECISION / "first_mismatch" / "diff_analyze_20250302110000.json")
    assert [(t.kind, t.rank, len(t.rows)) for t in diff] == [
        ("diff_analyze", 0, 2),
        ("diff_analyze", 1, 2),
    ]


@pytest.mark.parametrize(
    "document",
    [
        [{"op_name": "Torch.matmul.1.forward.output.0", "Cosine": 0.5, "Result": "error"}],
        {"Torch.matmul.1.forward.output.0": {"Cosine": 0.5, "Result": "error"}},
        {
            "results": [
                {"name": "Torch.matmul.1.forward.output.0", "Cosine": "0.5", "Result": "error"}
            ]
        },
    ],
    ids=["list", "keyed-by-name", "nested-list"],
)
def test_the_json_reader_takes_the_layouts_it_documents(tmp_path: Path, document: object) -> None:
    path = tmp_path / "compare_result_rank2_1.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    [table] = read_compare_json(path)
    assert table.rank == 2 and table.problems == []
    assert [(r.name, r.metrics, r.verdict) for r in table.rows] == [
        ("Torch.matmul.1.forward.output.0", {"cosine": 0.5}, "error")
    ]


def test_a_merge_workbook_becomes_one_table_per_rank() -> None:
    tables = read_merge_workbook(
        PRECISION / "merge" / "multi_ranks_compare_merge_20250302113000.xlsx"
    )
    assert [(t.rank, len(t.rows)) for t in tables] == [(0, 4), (1, 4), (2, 4), (3, 4)]
    assert tables[2].rows[2].metrics == {
        "max_diff": 0.015,
        "norm_diff": 0.3,
        "mean_rel_diff": pytest.approx(0.06),
    }
    assert tables[3].rows[0].metrics == {}  # N/A in every sheet


def test_an_msit_result_uses_the_first_of_duplicate_columns_and_is_precision_error() -> None:
    table = read_msit_result(PRECISION / "msit" / "20250302120000" / "result_20250302120000.csv")
    assert table.kind == "msit" and table.verdict_column == "IsPrecisionError"
    assert [row.verdict for row in table.rows] == [
        "pass",
        "pass",
        "pass",
        "error",
        "unmatched",
        "pass",
    ]
    assert table.rows[3].name == "Sub_26Mul_28" and table.rows[3].metrics["cosine"] == 0.9341


def test_acc_check_results_and_details() -> None:
    results = read_acc_check(
        PRECISION / "acc_check" / "accuracy_checking_result_20250302130000.csv"
    )
    assert [r.api for r in results.results if r.failed] == [
        "Functional.softmax.0",
        "Torch.matmul.3",
    ]
    assert results.results[-1].forward == "skip"
    details = read_acc_check(
        PRECISION / "acc_check" / "accuracy_checking_details_20250302130000.csv"
    )
    assert [d.status for d in details.details] == ["pass", "error", "pass", "error", "pass"]
    assert details.details[3].metrics["cosine"] == 0.9712
    assert details.details[3].message == "余弦相似度不达标"


def test_an_anomaly_file_gives_the_first_node_of_rank_3_with_its_stack() -> None:
    found = read_anomaly_analyze(
        PRECISION / "overflow" / "anomaly_analyze_1740909600000000000.json"
    )
    [first] = found.first_per_rank()
    assert (first.rank, first.op_name, len(found.nodes)) == (3, "Torch.matmul.12.forward", 2)
    assert first.bad_outputs[0] == "output.0 Max=inf"
    assert len(first.stack) == 3 and "line 431" in first.stack[0]


def test_damaged_files_are_problems_not_crashes(tmp_path: Path) -> None:
    truncated = read_compare_table(
        PRECISION / "damaged" / "compare_result_rank5_20250302140000.csv"
    )
    assert len(truncated.rows) == 4
    assert truncated.problems == [
        f"{PRECISION}/damaged/compare_result_rank5_20250302140000.csv:6: 6 fields where the header has 27; row skipped"
    ]
    broken = read_anomaly_analyze(
        PRECISION / "damaged" / "anomaly_analyze_1740913200000000000.json"
    )
    assert broken.nodes == [] and "not JSON" in broken.problems[0]
    fake = tmp_path / "compare_result_rank1_x.xlsx"
    fake.write_bytes(b"PK\x03\x04 not really a zip")
    table = read_compare_table(fake)
    assert table.rows == [] and "not a readable .xlsx workbook" in table.problems[0]
    whole = (PRECISION / "compare_4rank" / "compare_result_rank0_20250302093000.xlsx").read_bytes()
    cut = tmp_path / "compare_result_rank2_cut.xlsx"
    cut.write_bytes(whole[: len(whole) // 2])  # a copy interrupted half way
    table = read_compare_table(cut)
    assert table.rows == [] and ".xlsx workbook" in table.problems[0]
    bad_json = tmp_path / "diff_analyze_1.json"
    bad_json.write_text("[1, 2", encoding="utf-8")
    assert "not JSON" in read_compare_json(bad_json)[0].problems[0]
