"""The CSV reader every profiling table shares: header spellings, quirks, and bad rows reported
(file and line) and skipped, never raised."""

from __future__ import annotations

import pandas as pd
import pytest

from npuwatch.parsers.problem_list import MAX_PROBLEMS_PER_FILE
from npuwatch.profiling.msprof.kernels import KERNEL_SPEC, parse_kernels
from npuwatch.profiling.msprof.statistics import parse_api_statistic, parse_op_statistic
from npuwatch.profiling.msprof.tables import empty_table

MSPROF_HEADER = "Op Name,OP Type,Task Type,Task Start Time(us),Task Duration(us),Task Wait Time(us),Block Num,Mix Block Num"
TORCH_HEADER = (
    "Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Dim,Mix Block Dim"
)


@pytest.mark.parametrize("header", [MSPROF_HEADER, TORCH_HEADER], ids=["msprof", "torch"])
def test_both_spellings_of_a_kernel_table_give_the_same_columns(header: str) -> None:
    parsed = parse_kernels(f"{header}\nCast1,Cast,AI_VECTOR_CORE,100.5,3.25,1.5,8,0\n", "k.csv")
    assert parsed.problems == []
    row = parsed.frame.iloc[0]
    assert (row["op_name"], row["op_type"], row["task_type"]) == ("Cast1", "Cast", "AI_VECTOR_CORE")
    assert (row["start_us"], row["duration_us"], row["wait_us"]) == (100.5, 3.25, 1.5)
    assert (row["block_num"], row["mix_block_num"]) == (8, 0)


def test_the_canonical_columns_come_first_in_a_fixed_order_and_the_extras_follow() -> None:
    parsed = parse_kernels(
        "aic_mac_ratio,Duration(us),Name,cube_utilization(%)\n0.5,3,Add1,81.2\n", "k.csv"
    )
    columns = list(parsed.frame.columns)
    assert columns[: len(KERNEL_SPEC.columns())] == KERNEL_SPEC.columns()
    assert columns[len(KERNEL_SPEC.columns()) :] == ["aic_mac_ratio", "cube_utilization_pct"]
    assert parsed.frame["cube_utilization_pct"][0] == 81.2


def test_spaces_after_the_commas_of_a_header_and_its_rows_are_ignored() -> None:
    text = "Op Name, OP Type, Task Type, Task Duration(us)\nConv2D_1, Conv2D, AI Core, 12.5\n"
    parsed = parse_kernels(text, "k.csv")
    assert parsed.problems == []
    assert parsed.frame[["op_name", "op_type", "task_type", "duration_us"]].iloc[0].tolist() == [
        "Conv2D_1",
        "Conv2D",
        "AI_CORE",
        12.5,
    ]


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("AI Core", "AI_CORE"),
        ("AI_CORE", "AI_CORE"),
        ("AI Vector Core", "AI_VECTOR_CORE"),
        ("AI CPU", "AI_CPU"),
        ("mix_aic", "MIX_AIC"),
        ("HCCL", "HCCL"),
    ],
)
def test_core_types_are_one_spelling(written: str, read: str) -> None:
    parsed = parse_op_statistic(f"OP Type,Core Type,Count,Total Time(us)\nX,{written},1,2\n", "s")
    assert parsed.frame["task_type"][0] == read


def test_a_start_time_without_a_unit_in_its_header_is_still_the_start() -> None:
    parsed = parse_kernels(
        "Op Name,Task Start Time,Task Duration(us)\nA,1043640017380.831,1\n", "k"
    )
    assert parsed.frame["start_us"][0] == pytest.approx(1043640017380.831)


def test_a_tab_after_a_quoted_start_time_and_tripled_quotes_around_shapes_are_removed() -> None:
    text = 'Name,Start Time(us),Duration(us),Input Shapes\nA,"12.5\t",1,"""4,8;16"""\n'
    frame = parse_kernels(text, "k.csv").frame
    assert frame["start_us"][0] == 12.5
    assert frame["input_shapes"][0] == "4,8;16"


def test_na_cells_are_missing_values_not_text_or_zero() -> None:
    text = "Name,Duration(us),Task ID,Input Shapes,Wait Time(us)\nhcom_1,5,N/A,N/A,N/A\n"
    row = parse_kernels(text, "k.csv").frame.iloc[0]
    assert pd.isna(row["task_id"]) and pd.isna(row["input_shapes"]) and pd.isna(row["wait_us"])


def test_an_api_statistic_host_row_has_no_device() -> None:
    text = "Device_id,Level,API Name,Time(us),Count,Avg(us),Min(us),Max(us),Variance\n"
    text += "host,acl,aclrtMemcpy,350.6,3,116.9,109.3,125.1,41.9\n0,acl,aclnnAdd,10,2,5,4,6,1\n"
    frame = parse_api_statistic(text, "api.csv").frame
    assert frame["device_id"].isna().tolist() == [True, False]
    assert frame["api_name"].tolist() == ["aclrtMemcpy", "aclnnAdd"]


def test_a_row_with_the_wrong_number_of_fields_is_reported_with_its_line_and_skipped() -> None:
    text = "Name,Duration(us)\nA,1\nB,2,extra\nC\nD,4\n"
    parsed = parse_kernels(text, "kernel_details.csv")
    assert parsed.frame["op_name"].tolist() == ["A", "D"]
    assert parsed.problems == [
        "kernel_details.csv:3: 3 fields where the header has 2; row skipped",
        "kernel_details.csv:4: 1 fields where the header has 2; row skipped",
    ]


def test_a_duration_that_is_not_a_number_skips_the_row_and_says_what_it_was() -> None:
    text = "Name,Duration(us)\nA,1\nB,fast\nC,\nD,4\n"
    parsed = parse_kernels(text, "kernel_details.csv")
    assert parsed.frame["op_name"].tolist() == ["A", "D"]
    assert parsed.frame.index.tolist() == [0, 1]
    assert parsed.problems == [
        "kernel_details.csv:3: Duration(us) is 'fast', not a number; row skipped",
        "kernel_details.csv:4: Duration(us) is empty; row skipped",
    ]


def test_line_numbers_count_the_lines_of_a_quoted_field_that_spans_two() -> None:
    text = 'Name,Duration(us),Input Shapes\nA,1,"4,\n8"\nB,x,4\n'
    parsed = parse_kernels(text, "k.csv")
    assert parsed.frame["input_shapes"][0] == "4,\n8"
    assert parsed.problems == ["k.csv:4: Duration(us) is 'x', not a number; row skipped"]


def test_a_flood_of_bad_rows_is_listed_up_to_a_limit_and_counted_beyond() -> None:
    text = "Name,Duration(us)\n" + "A,x\n" * 50 + "B,1\n"
    parsed = parse_kernels(text, "k.csv")
    assert parsed.frame["op_name"].tolist() == ["B"]
    assert len(parsed.problems) == MAX_PROBLEMS_PER_FILE + 1
    assert parsed.problems[-1] == f"k.csv: {50 - MAX_PROBLEMS_PER_FILE} more problems not listed"


@pytest.mark.parametrize("content", [b"", b"\n\n", b"   \r\n"], ids=["empty", "blank", "spaces"])
def test_an_empty_file_is_a_problem_with_an_empty_frame_of_the_known_columns(
    content: bytes,
) -> None:
    parsed = parse_kernels(content, "op_summary_1.csv")
    assert parsed.problems == ["op_summary_1.csv: empty file, no op_summary/kernel_details header"]
    assert parsed.frame.empty
    assert list(parsed.frame.columns) == KERNEL_SPEC.columns()


def test_a_header_without_rows_is_an_empty_table_and_no_problem() -> None:
    parsed = parse_kernels("Name,Duration(us)\n", "k.csv")
    assert parsed.problems == [] and parsed.frame.empty
    assert parsed.frame["duration_us"].dtype == "float64"


def test_a_file_of_another_kind_names_the_column_it_lacks() -> None:
    parsed = parse_kernels("OP Type,Count,Total Time(us)\nAdd,1,2\n", "kernel_details.csv")
    assert parsed.frame.empty
    assert parsed.problems == [
        "kernel_details.csv:1: op_summary/kernel_details header expected: no column 'Op Name' "
        "or 'Name', no column 'Task Duration(us)' or 'Duration(us)'"
    ]


def test_crlf_line_endings_and_a_byte_order_mark_are_read() -> None:
    parsed = parse_kernels(b"\xef\xbb\xbfName,Duration(us)\r\nA,1\r\nB,2\r\n", "k.csv")
    assert parsed.problems == []
    assert parsed.frame["op_name"].tolist() == ["A", "B"]
    assert parsed.frame["duration_us"].tolist() == [1, 2]


def test_bytes_that_are_not_utf8_or_not_text_never_raise() -> None:
    parsed = parse_kernels(b"Name,Duration(us)\n\xff\xfe\x00,1\nB,2\n", "k.csv")
    assert parsed.frame["op_name"].tolist()[-1] == "B"
    garbage = parse_kernels(bytes(range(256)) * 20, "k.csv")
    assert garbage.frame.empty and garbage.problems


def test_an_unclosed_quote_swallows_the_lines_after_it_into_one_bad_row() -> None:
    parsed = parse_kernels('Name,Duration(us)\nA,1\nB,"2\nC,3\n', "k.csv")
    assert parsed.frame["op_name"].tolist() == ["A"]
    assert parsed.problems == ["k.csv:3: Duration(us) is '2\\nC,3', not a number; row skipped"]


def test_a_file_cut_inside_a_quoted_last_field_keeps_what_was_written() -> None:
    parsed = parse_kernels('Name,Duration(us)\nA,1\nB,"2', "k.csv")
    assert parsed.frame["op_name"].tolist() == ["A", "B"]
    assert parsed.frame["duration_us"].tolist() == [1, 2]


def test_an_integer_column_holding_a_fraction_is_missing_rather_than_rounded() -> None:
    parsed = parse_kernels("Name,Duration(us),Block Num\nA,1,2.5\nB,1,16\n", "k.csv")
    assert parsed.frame["block_num"].isna().tolist() == [True, False]


def test_a_repeated_header_cell_keeps_both_columns() -> None:
    parsed = parse_kernels("Name,Duration(us),Count,Count\nA,1,2,3\n", "k.csv")
    assert parsed.frame[["count", "count_2"]].iloc[0].tolist() == [2, 3]


def test_the_empty_table_has_typed_columns() -> None:
    frame = empty_table(KERNEL_SPEC)
    assert frame["duration_us"].dtype == "float64"
    assert str(frame["block_num"].dtype) == "Int64"
