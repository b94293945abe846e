"""Console error blocks, torch_npu wrappers, c10 and Python lines (formats doc §2)."""

from __future__ import annotations

import pytest

from tests.conftest import parse, parse_one


@pytest.mark.parametrize(
    ("line", "code", "pid", "message"),
    [
        ("EZ9999: Inner Error!", "EZ9999", None, "Inner Error!"),
        (
            "EH9999  [Init][Env]init env failed![FUNC:Report]",
            "EH9999",
            None,
            "[Init][Env]init env failed![FUNC:Report]",
        ),
        (
            "E89999: [PID: 2277] 2024-11-04-17:38:30.068.533 op[Range], bad",
            "E89999",
            2277,
            "op[Range], bad",
        ),
        (
            "EH9999[PID: 285] 2025-12-12-12:10:10.639.672 (EH9999):  [Query]failed",
            "EH9999",
            285,
            "[Query]failed",
        ),
        (
            "[PID: 3480] 2025-12-24-14:10:31.094.189 Execution_Error_SDMA(EI0012): SDMA exception",
            "EI0012",
            3480,
            "SDMA exception",
        ),
        (
            "[PID:3729]2025-10-23-17:30:40.098.984Config_Error_Env(EI0001): Value 1000 invalid",
            "EI0001",
            3729,
            "Value 1000 invalid",
        ),
        ("Ranktable_Check_Failed(EI0014): check failed", "EI0014", None, "check failed"),
        (
            "E30006: 2025-11-19-11:14:58.516.606 Failed to verify the OPP",
            "E30006",
            None,
            "Failed to verify the OPP",
        ),
        (
            "EE9999: Inner Error, Please contact support engineer.",
            "EE9999",
            None,
            "Inner Error, Please contact support engineer.",
        ),
    ],
)
def test_error_block_first_lines_carry_their_code(
    line: str, code: str, pid: int | None, message: str
) -> None:
    record = parse_one(line)
    assert (record.format, record.level, record.error_code, record.pid, record.message) == (
        "error_block",
        "ERROR",
        code,
        pid,
        message,
    )


def test_possible_cause_solution_and_traceback_lines_belong_to_the_block() -> None:
    records = parse(
        "EL0004: [PID: 316] 2025-09-28-07:22:29.827.496 Failed to allocate memory.\n"
        "        Possible Cause: Available memory is insufficient.\n"
        "        Solution: Close applications not in use.\n"
        "        TraceBack (most recent call last):\n"
        "        alloc device memory failed, runtime result = 207001[FUNC:ReportCallError]\n"
    )
    assert len(records) == 1
    assert records[0].line_count == 5
    assert records[0].error_codes == ["EL0004"]
    assert records[0].runtime_codes == [207001]
    assert records[0].timestamp_us == 1759044149827496


def test_torch_npu_wrapper_line_gives_pid_device_rank_and_framework_code() -> None:
    record = parse_one(
        "[ERROR] 2025-05-21-11:57:54 (PID:927000, Device:3, RankID:3) ERR02200 DIST call hccl "
        "api failed."
    )
    assert (record.format, record.pid, record.device, record.rank, record.framework_code) == (
        "torch_npu",
        927000,
        3,
        3,
        "ERR02200",
    )


def test_negative_device_and_rank_mean_unknown() -> None:
    record = parse_one("[ERROR] 2026-03-02-15:44:05 (PID:1, Device:-1, RankID:-1) ERR99999 x")
    assert (record.device, record.rank) == (None, None)


def test_runtime_error_line_carries_the_numeric_code() -> None:
    record = parse_one(
        "RuntimeError: InnerRunOpApi:OpParamMaker.cpp:281 NPU function error: call aclnnX, "
        "error code is 507035"
    )
    assert (record.format, record.level, record.runtime_codes) == ("python", "ERROR", [507035])


def test_c10_lines_give_rank_level_and_a_time_completed_with_the_year_of_the_stream() -> None:
    _, c10 = parse(
        "[ERROR] 2025-09-28-07:22:30 (PID:316198, Device:7, RankID:-1) ERR00100 PTA failed\n"
        "[rank7]:[E928 07:22:40.736525688 compiler_depend.ts:429] operator(): error code is 207001\n"
    )
    assert (c10.format, c10.level, c10.rank, c10.runtime_codes) == ("c10", "ERROR", 7, [207001])
    assert c10.timestamp_us == 1759044160736525  # 2025-09-28T07:22:40.736525Z
    assert (c10.origin_file, c10.origin_line) == ("compiler_depend.ts", 429)


def test_c10_warning_without_a_date() -> None:
    record = parse_one(
        "[W NPUStream.cpp:371] Warning: NPU warning, error code is 107020[Error]: task timeout."
    )
    assert (record.level, record.runtime_codes) == ("WARNING", [107020])
