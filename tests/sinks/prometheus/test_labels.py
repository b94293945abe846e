"""The label vocabularies: they cover what the parsers and the default rules produce, and stay
small enough to be labels."""

from __future__ import annotations

from npuwatch.parsers.debug_entries import LOGGERS as DEBUG_LOGGERS
from npuwatch.rules.loader import DEFAULT_PACKS, load_rules
from npuwatch.sinks.prometheus.labels import (
    CANN_CODES,
    KINDS,
    LEVELS,
    codes_named_by,
    modules_named_by,
)
from npuwatch.vocabulary import CANN_MODULES
from tests.conftest import GOLDEN, TREES, parse


def test_the_catalogue_knows_every_code_the_default_rules_name() -> None:
    named = codes_named_by(load_rules([DEFAULT_PACKS]).rules)

    assert "EI0002" in named
    assert named <= CANN_CODES


def test_every_module_the_default_rules_name_is_known() -> None:
    named = modules_named_by(load_rules([DEFAULT_PACKS]).rules)

    assert "HCCL" in named
    # The debugging tools' loggers name telemetry entries, which the ascend_* log metrics never
    # count (their kind is a telemetry kind): no module label needs them.
    assert named - set(DEBUG_LOGGERS) <= CANN_MODULES


def test_every_level_and_cann_module_in_the_fixtures_is_known() -> None:
    levels, modules = set(), set()
    for file in [*GOLDEN.glob("*.log"), *TREES.rglob("*.log")]:
        for record in parse(file.read_bytes(), path=str(file)):
            levels.add(record.level)
            if record.format in ("slog", "mindspore"):
                modules.add(record.logger)

    assert levels - {None} <= LEVELS
    assert modules <= CANN_MODULES


def test_the_log_kinds_are_those_a_path_can_name() -> None:
    assert {"plog", "device", "device-os", "device-app", "event", "firmware", "slogd"} < KINDS


def test_every_vocabulary_is_small_enough_for_a_label() -> None:
    assert len(CANN_CODES) < 200
    assert len(CANN_MODULES) < 100
    assert len(LEVELS) < 20
    assert all(len(code) == 6 for code in CANN_CODES)
