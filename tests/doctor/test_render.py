"""The report as text (grouped, aligned, colours only when asked) and as JSON."""

from __future__ import annotations

import json

import pytest

from npuwatch.doctor.render import as_document, as_json, as_text
from npuwatch.doctor.report import Check, Diagnosis
from npuwatch.terminal import Palette

DIAGNOSIS = Diagnosis(
    host_name="node-7",
    container="/.dockerenv",
    checks=(
        Check("cann.toolkit", "environment", "CANN toolkit", "ok", "7.0.0 (/x/version.cfg)"),
        Check("cann.firmware", "environment", "firmware", "absent", "not found"),
        Check(
            "device.nodes",
            "devices",
            "device nodes",
            "fail",
            "no /dev/davinci*",
            "recreate the container with --device=/dev/davinci0",
            {"davinci": []},
        ),
        Check(
            "log.global_log_level",
            "logs",
            "ASCEND_GLOBAL_LOG_LEVEL",
            "warn",
            "0 = DEBUG",
            "export ASCEND_GLOBAL_LOG_LEVEL=3",
        ),
    ),
)


def test_text_is_grouped_in_diagnostic_order_with_the_action_under_its_check() -> None:
    assert as_text(DIAGNOSIS, Palette(enabled=False)).splitlines() == [
        "npuwatch doctor: node-7, in a container (/.dockerenv)",
        "",
        "Environment",
        "  ok     CANN toolkit             7.0.0 (/x/version.cfg)",
        "  absent firmware                 not found",
        "",
        "Devices",
        "  fail   device nodes             no /dev/davinci*",
        "                                  → recreate the container with --device=/dev/davinci0",
        "",
        "Logs",
        "  warn   ASCEND_GLOBAL_LOG_LEVEL  0 = DEBUG",
        "                                  → export ASCEND_GLOBAL_LOG_LEVEL=3",
        "",
        "1 ok, 1 warn, 1 fail, 1 absent: 2 to look at, from the top (an early one often "
        "explains the rest)",
    ]


def test_colours_mark_fail_and_warn_only_when_enabled() -> None:
    coloured = as_text(DIAGNOSIS, Palette(enabled=True))
    assert "\033[31mfail  \033[0m" in coloured
    assert "\033[33mwarn  \033[0m" in coloured
    assert "\033[" not in as_text(DIAGNOSIS, Palette(enabled=False))


def test_nothing_wrong_is_said_plainly() -> None:
    calm = Diagnosis("node-7", None, DIAGNOSIS.checks[:2])
    text = as_text(calm, Palette(enabled=False))
    assert text.splitlines()[0] == "npuwatch doctor: node-7"
    assert text.endswith("1 ok, 0 warn, 0 fail, 1 absent: nothing wrong found\n")


def test_the_json_document_has_a_stable_shape() -> None:
    document = json.loads(as_json(DIAGNOSIS))
    assert document == as_document(DIAGNOSIS)
    assert list(document) == ["schema_version", "host", "status", "counts", "checks"]
    assert document["schema_version"] == 1
    assert document["host"] == {"name": "node-7", "container": "/.dockerenv"}
    assert document["status"] == "fail"
    assert document["counts"] == {"ok": 1, "warn": 1, "fail": 1, "absent": 1}
    assert document["checks"][2] == {
        "key": "device.nodes",
        "group": "devices",
        "title": "device nodes",
        "status": "fail",
        "detail": "no /dev/davinci*",
        "action": "recreate the container with --device=/dev/davinci0",
        "facts": {"davinci": []},
    }
    assert document["checks"][0]["action"] is None


def test_a_warning_without_an_action_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="says nothing to do"):
        Check("x", "logs", "x", "warn", "something is off")


def test_the_overall_status_is_the_worst_finding() -> None:
    ok, absent, fail, warn = DIAGNOSIS.checks
    assert Diagnosis("h", None, (ok, absent)).status == "ok"
    assert Diagnosis("h", None, (ok, warn)).status == "warn"
    assert Diagnosis("h", None, (warn, fail)).status == "fail"
