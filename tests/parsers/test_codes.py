"""Error codes inside records (formats doc §4)."""

from __future__ import annotations

import pytest

from npuwatch.parsers.codes import find_error_codes, find_framework_code, find_runtime_codes
from tests.conftest import parse_one


@pytest.mark.parametrize(
    ("text", "codes"),
    [
        ("report error module_type=5, module_name=EZ9999", ["EZ9999"]),
        ("report error_message, error_code:E19999, work_stream_id:11", ["E19999"]),
        ("detail:EZ9999: Inner Error! then EL0004 and EZ9999 again", ["EZ9999", "EL0004"]),
        ("warning W40001 before E40021", ["W40001", "E40021"]),
        ("hash 0xE12345 and token XE12345 are not codes", []),
        ("E300091 has too many digits; ERR02200 is not a CANN code", []),
        ("[E928 07:22:40 c10 stamp", []),
    ],
)
def test_six_character_codes_in_order_without_repeats(text: str, codes: list[str]) -> None:
    assert find_error_codes(text) == codes


@pytest.mark.parametrize(
    ("text", "codes"),
    [
        ("ErrCode=507015, desc=[aicore exception], InnerCode=0x7150026", [507015]),
        ("runtime result = 507014", [507014]),
        ("error code is 507035", [507035]),
        ("acl set device 0 failed, errorCode = 507033", [507033]),
        ("StreamSyncError: code=507046, des=[stream sync timeout]", [507046]),
        ("Device 8 call rtSetDevice failed, ret[107001].", [107001]),
        ("retcode: 507011 ( model exec failed)", [507011]),
        ("size=2147483648; retCode=117571606; error code = 0x800000", []),
        ("HcclAllreduce, error code is 6", []),
    ],
)
def test_numeric_runtime_codes(text: str, codes: list[int]) -> None:
    assert find_runtime_codes(text) == codes


def test_framework_code() -> None:
    assert find_framework_code("(PID:1, Device:0, RankID:-1) ERR02200 DIST call") == "ERR02200"
    assert find_framework_code("no code") is None


def test_numeric_codes_are_read_from_error_records_not_from_debug_chatter() -> None:
    head = "RUNTIME(1,p):2025-01-01-00:00:00.000.000 [a.cc:1]1 F:runtime result = 507014"
    assert parse_one("[ERROR] " + head).runtime_codes == [507014]
    assert parse_one("[DEBUG] " + head).runtime_codes == []


def test_a_continuation_line_can_bring_a_code_to_its_record() -> None:
    from tests.conftest import parse

    (record,) = parse(
        "[ERROR] GE(1,p):2025-01-01-00:00:00.000.000 [a.cc:1]1 F:failed, TraceBack:\n"
        "        inner failure E39999 on device\n"
    )
    assert record.error_codes == ["E39999"]
