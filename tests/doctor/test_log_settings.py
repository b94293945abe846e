"""The ASCEND_* log variables: what each means, and when it will hurt."""

from __future__ import annotations

import pytest

from npuwatch.doctor.log_settings import (
    event_enable_check,
    global_level_check,
    host_file_num_check,
    log_setting_checks,
    module_level_check,
    parse_module_levels,
    print_to_stdout_check,
    process_log_path_check,
)


@pytest.mark.parametrize(
    ("value", "status", "detail"),
    [
        (None, "ok", "unset: ERROR (3), the default"),
        ("3", "ok", "3 = ERROR (the default)"),
        ("2", "ok", "2 = WARNING"),
        ("0", "warn", "0 = DEBUG: tens of MB/s of plog on a busy host — DEBUG fills disks"),
        ("1", "warn", "1 = INFO: every INFO line of every module goes to plog; disks fill fast"),
        ("4", "warn", "4 = NULL: not even errors reach the debug log; a failure leaves no trace"),
        (
            "debug",
            "warn",
            "'debug' is not a level from 0 (DEBUG) to 4 (NULL): CANN will not use it",
        ),
        ("7", "warn", "'7' is not a level from 0 (DEBUG) to 4 (NULL): CANN will not use it"),
    ],
)
def test_the_global_level(value: str | None, status: str, detail: str) -> None:
    check = global_level_check({} if value is None else {"ASCEND_GLOBAL_LOG_LEVEL": value})
    assert (check.status, check.detail) == (status, detail)


def test_debug_on_says_to_go_back_to_error() -> None:
    check = global_level_check({"ASCEND_GLOBAL_LOG_LEVEL": "0"})
    assert check.action is not None
    assert check.action.startswith("export ASCEND_GLOBAL_LOG_LEVEL=3 (ERROR)")
    assert check.facts == {"value": "0", "level": 0}


def test_module_levels_are_read_as_pairs() -> None:
    assert parse_module_levels("GE=0:runtime=1") == {"GE": 0, "RUNTIME": 1}
    assert parse_module_levels("GE=0:RUNTIME") is None
    assert parse_module_levels("GE=9") is None
    assert parse_module_levels("=1") is None


def test_a_module_at_debug_warns_and_names_only_that_module() -> None:
    check = module_level_check({"ASCEND_MODULE_LOG_LEVEL": "GE=0:RUNTIME=1:HCCL=3"})
    assert check.status == "warn"
    assert check.detail == "GE at DEBUG: GE=0 (DEBUG), RUNTIME=1 (INFO), HCCL=3 (ERROR)"
    assert check.action == "remove GE=0 outside an investigation"


def test_modules_above_debug_are_listed_and_ok() -> None:
    check = module_level_check({"ASCEND_MODULE_LOG_LEVEL": "TDT=1:DRV=2"})
    assert (check.status, check.detail) == ("ok", "TDT=1 (INFO), DRV=2 (WARNING)")


def test_a_malformed_module_value_warns_that_cann_ignores_all_of_it() -> None:
    check = module_level_check({"ASCEND_MODULE_LOG_LEVEL": "GE:0"})
    assert check.status == "warn"
    assert check.detail == "'GE:0' is malformed: CANN ignores the whole value"


def test_the_process_log_path_says_where_logs_go() -> None:
    assert process_log_path_check({}).detail == "unset: CANN writes to ~/ascend/log"
    work = process_log_path_check({"ASCEND_WORK_PATH": "/work"})
    assert work.detail == "unset: CANN writes to $ASCEND_WORK_PATH/log"
    named = process_log_path_check({"ASCEND_PROCESS_LOG_PATH": "/data/log"})
    assert (named.status, named.detail) == ("ok", "/data/log (host logs go there)")


@pytest.mark.parametrize(
    ("value", "status", "detail"),
    [
        (None, "ok", "unset: 10 files (at most 200 MiB per process and folder)"),
        ("1000", "ok", "1000 files (at most 19.5 GiB per process and folder)"),
        ("0", "warn", "'0' is not a number from 1 to 1000: CANN keeps its default of 10 files"),
        ("ten", "warn", "'ten' is not a number from 1 to 1000: CANN keeps its default of 10 files"),
    ],
)
def test_the_number_of_host_log_files(value: str | None, status: str, detail: str) -> None:
    check = host_file_num_check({} if value is None else {"ASCEND_HOST_LOG_FILE_NUM": value})
    assert (check.status, check.detail) == (status, detail)


def test_printing_logs_to_stdout_warns_that_the_files_stay_empty() -> None:
    check = print_to_stdout_check({"ASCEND_LOG_PRINT_TO_STDOUT": "1"})
    assert check.status == "warn"
    assert (
        check.detail
        == "ASCEND_LOG_PRINT_TO_STDOUT=1: logs go to standard output, not to plog files"
    )


def test_the_old_stdout_variable_is_read_and_called_deprecated() -> None:
    check = print_to_stdout_check({"ASCEND_SLOG_PRINT_TO_STDOUT": "1"})
    assert check.status == "warn"
    assert check.detail.startswith("ASCEND_SLOG_PRINT_TO_STDOUT=1: logs go to standard output")
    assert "old name (deprecated in CANN 9.2.0" in check.detail
    quiet = print_to_stdout_check({"ASCEND_SLOG_PRINT_TO_STDOUT": "0"})
    assert quiet.status == "ok"
    assert "old name" in quiet.detail


@pytest.mark.parametrize(
    ("value", "status"), [(None, "ok"), ("1", "ok"), ("0", "warn"), ("yes", "warn")]
)
def test_event_records(value: str | None, status: str) -> None:
    check = event_enable_check({} if value is None else {"ASCEND_GLOBAL_EVENT_ENABLE": value})
    assert check.status == status


def test_every_log_variable_gets_one_check_with_a_stable_key() -> None:
    keys = [check.key for check in log_setting_checks({})]
    assert keys == [
        "log.global_log_level",
        "log.module_log_level",
        "log.process_log_path",
        "log.host_log_file_num",
        "log.log_print_to_stdout",
        "log.global_event_enable",
    ]
