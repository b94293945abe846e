"""The `ascend_*` collector: exact counts by label, `other` folding, bounded label sets, and an
exposition that Prometheus's parser reads back."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from npuwatch.agent.rules_stage import event_row
from npuwatch.handoff import EventRow
from npuwatch.metrics import SelfMetrics
from npuwatch.parsers.stream import StreamParser
from npuwatch.rules.engine import RuleEngine
from npuwatch.rules.loader import DEFAULT_PACKS, load_rules
from npuwatch.sinks.prometheus.log_metrics import LogMetrics
from tests.conftest import parse, utc_clock
from tests.sinks.prometheus.conftest import sample, samples, tree_batches

PLOG = "/root/ascend/log/debug/plog/plog-3300_20250914093300120.log"


def plog(level: str, module: str, text: str = "step done", second: int = 0) -> str:
    return f"[{level}] {module}(3300,python3):2025-09-14-09:37:{second:02d}.000.000 [a.cc:1] 3300 {text}"


def epoch_s(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


def row(rule: str, severity: str = "error", category: str | None = "error") -> EventRow:
    return EventRow(
        id=rule, timestamp_us=None, rule=rule, category=category, severity=severity, level=None,
        logger=None, code=None, device=None, host=None, path=None, file_key=None, offset=None,
        pid=None, count=1, document="{}",
    )  # fmt: skip


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def metrics(registry: CollectorRegistry) -> LogMetrics:
    return LogMetrics(registry)


def test_records_of_a_fixture_tree_are_counted_by_kind_level_and_module(
    registry: CollectorRegistry, metrics: LogMetrics
) -> None:
    for batch in tree_batches("aicore-exception"):
        metrics.observe(batch.records, batch.kind)

    assert samples(registry, "ascend_log_records_total") == {
        ("plog", "INFO", "ASCENDCL"): 1,
        ("plog", "INFO", "RUNTIME"): 5,
        ("plog", "EVENT", "GE"): 1,
        ("plog", "EVENT", "TDT"): 1,
        ("plog", "INFO", "DRV"): 1,
        ("plog", "INFO", "HCCL"): 8,
        ("plog", "ERROR", "RUNTIME"): 4,
        ("plog", "ERROR", "GE"): 1,
        ("plog", "ERROR", "ASCENDCL"): 1,
        ("plog", "ERROR", "APP"): 1,
        ("firmware", "INFO", "TSCH"): 1,
        ("firmware", "ERROR", "TSCH"): 1,
        ("event", "EVENT", "DRV"): 1,
    }


def test_error_codes_of_a_fixture_tree_are_counted_with_their_module(
    registry: CollectorRegistry, metrics: LogMetrics
) -> None:
    for name in ("aicore-exception", "out-of-memory"):
        for batch in tree_batches(name):
            metrics.observe(batch.records, batch.kind)

    assert samples(registry, "ascend_log_errors_total") == {
        ("EZ9999", "RUNTIME"): 1,
        ("E30009", "GE"): 1,
        ("EL0004", "none"): 1,  # train.log: a console block, no module
    }


def test_the_newest_record_time_is_kept_per_kind(
    registry: CollectorRegistry, metrics: LogMetrics
) -> None:
    for batch in tree_batches("aicore-exception"):
        metrics.observe(batch.records, batch.kind)

    newest = samples(registry, "ascend_log_last_record_timestamp_seconds")
    assert newest == {
        ("plog",): epoch_s("2025-07-02T21:16:48.535949"),
        # the firmware wrote its first line before its clock was synced (1970)
        ("firmware",): epoch_s("2025-07-02T21:16:48.531516"),
        ("event",): epoch_s("2025-07-02T21:16:48.534506"),
    }


def test_an_older_batch_does_not_move_the_newest_record_time_back(
    registry: CollectorRegistry, metrics: LogMetrics
) -> None:
    metrics.observe(parse(plog("INFO", "GE", second=30) + "\n", PLOG), "plog")
    metrics.observe(parse(plog("INFO", "GE", second=10) + "\n", PLOG), "plog")

    newest = sample(registry, "ascend_log_last_record_timestamp_seconds", kind="plog")
    assert newest == epoch_s("2025-09-14T09:37:30")


def test_a_record_with_several_codes_counts_once_for_each(
    registry: CollectorRegistry, metrics: LogMetrics
) -> None:
    records = parse(plog("ERROR", "GE", "report E19999 after EI0002, then E19999 again") + "\n")
    assert records[0].error_codes == ["E19999", "EI0002"]

    metrics.observe(records, "plog")

    assert samples(registry, "ascend_log_errors_total") == {
        ("E19999", "GE"): 1,
        ("EI0002", "GE"): 1,
    }


def test_codes_outside_the_catalogue_count_as_other(
    registry: CollectorRegistry, metrics: LogMetrics
) -> None:
    lines = [plog("ERROR", "HCCL", "EI0002 timeout"), plog("ERROR", "HCCL", "EI0777 something")]
    lines.append(plog("ERROR", "HCCL", "EI0778 else"))
    metrics.observe(parse("\n".join(lines) + "\n"), "plog")

    assert samples(registry, "ascend_log_errors_total") == {
        ("EI0002", "HCCL"): 1,
        ("other", "HCCL"): 2,
    }


def test_the_inner_error_and_parameter_codes_of_every_family_are_known(
    registry: CollectorRegistry, metrics: LogMetrics
) -> None:
    metrics.observe(parse(plog("ERROR", "FE", "EK9999 and EP8888") + "\n"), "plog")

    assert set(samples(registry, "ascend_log_errors_total")) == {("EK9999", "FE"), ("EP8888", "FE")}


def test_unknown_modules_levels_and_kinds_count_as_other_and_absent_ones_as_none(
    registry: CollectorRegistry, metrics: LogMetrics
) -> None:
    records = parse("no header\n" + plog("INFO", "MYPLUGIN") + "\n" + plog("ERROR", "GE") + "\n")
    records[2].level = "LOUD"

    metrics.observe(records, "tarball")

    assert samples(registry, "ascend_log_records_total") == {
        ("other", "INFO", "other"): 1,
        ("other", "other", "GE"): 1,
        ("other", "none", "none"): 1,
    }


def test_framework_logger_names_are_not_modules(
    registry: CollectorRegistry, metrics: LogMetrics
) -> None:
    lines = [
        "[285] [2025-09-03 08:15:28:644] torch.distributed: [ERROR] [479] Find exception",
        "2025-09-03 08:15:29,218 - lmdeploy - ERROR - model_agent.py:489 - Rank[2] failed.",
    ]
    records = parse("\n".join(lines) + "\n")
    assert [record.logger for record in records] == ["torch.distributed", "lmdeploy"]

    metrics.observe(records, "other")

    assert [key[2] for key in samples(registry, "ascend_log_records_total")] == ["other"]


def test_rule_events_are_counted_by_rule_severity_and_category(
    registry: CollectorRegistry, metrics: LogMetrics
) -> None:
    engine = RuleEngine(load_rules([DEFAULT_PACKS]))
    for batch in tree_batches("aicore-exception"):
        parser = StreamParser(utc_clock(), path=batch.path)
        stream = engine.stream(parser.source)
        engine.process(batch.records, stream)
        stream.close()
    rows = [event_row(event, "file-key") for event in engine.flush()]

    metrics.observe_events(rows)

    assert samples(registry, "ascend_rule_events_total") == {
        ("operations.clock-not-synced", "info", "config"): 1,
        ("device.aicore-exception", "critical", "device"): 2,
        ("task.failed", "error", "device"): 1,
        ("cann.code.inner-error", "error", "error"): 1,
        ("cann.family.operator", "error", "error"): 1,
        ("device.fault-event", "error", "device"): 1,
        ("error.graph-engine", "error", "error"): 1,
        ("acl.507015.aicore-exception", "critical", "device"): 1,
        ("error.application", "error", "error"): 1,
    }


def test_an_event_without_a_category_or_with_an_unknown_severity_is_still_counted(
    registry: CollectorRegistry, metrics: LogMetrics
) -> None:
    metrics.observe_events([row("a", category=None), row("b", severity="panic")])

    assert samples(registry, "ascend_rule_events_total") == {
        ("a", "error", "none"): 1,
        ("b", "other", "error"): 1,
    }


def test_label_sets_beyond_the_limit_are_counted_under_other(registry: CollectorRegistry) -> None:
    metrics = LogMetrics(registry, max_label_sets=3)

    metrics.observe_events(row(f"rule.{n}") for n in range(10))
    metrics.observe_events([row("rule.0"), row("rule.9")])

    assert samples(registry, "ascend_rule_events_total") == {
        ("rule.0", "error", "error"): 2,
        ("rule.1", "error", "error"): 1,
        ("rule.2", "error", "error"): 1,
        ("other", "other", "other"): 8,
    }


def test_batches_add_up(registry: CollectorRegistry, metrics: LogMetrics) -> None:
    records = parse("\n".join(plog("INFO", "GE", second=n) for n in range(10)) + "\n")

    metrics.observe(records[:4], "plog")
    metrics.observe(records[4:], "plog")
    metrics.observe([], "plog")

    assert samples(registry, "ascend_log_records_total") == {("plog", "INFO", "GE"): 10}


def test_the_exposition_parses_back_with_base_units_and_total_suffixes(
    registry: CollectorRegistry, metrics: LogMetrics
) -> None:
    SelfMetrics(registry)
    for batch in tree_batches("hccl-timeout"):
        metrics.observe(batch.records, batch.kind)
    metrics.observe_events([row("hccl.notify-wait-timeout", category="timeout")])

    families = {
        family.name: family
        for family in text_string_to_metric_families(generate_latest(registry).decode())
    }

    kinds = {name: families[name].type for name in families if name.startswith("ascend_")}
    assert kinds == {
        "ascend_log_records": "counter",
        "ascend_log_errors": "counter",
        "ascend_rule_events": "counter",
        "ascend_log_last_record_timestamp_seconds": "gauge",
        # When each label set was first counted (the text format shows them as gauges).
        "ascend_log_records_created": "gauge",
        "ascend_log_errors_created": "gauge",
        "ascend_rule_events_created": "gauge",
    }
    records = families["ascend_log_records"].samples
    assert {point.name for point in records} == {"ascend_log_records_total"}
    assert sum(point.value for point in records) == sum(
        len(batch.records) for batch in tree_batches("hccl-timeout")
    )
    assert {tuple(point.labels) for point in records} == {("kind", "level", "module")}
    assert "npuwatch_records" in families  # the agent's own metrics, from the same registry


def test_a_registry_refuses_a_second_collector_of_the_same_metrics(
    registry: CollectorRegistry, metrics: LogMetrics
) -> None:
    with pytest.raises(ValueError, match="ascend_log_records"):
        LogMetrics(registry)


def test_the_collector_can_be_built_without_a_registry_and_registered_later() -> None:
    metrics = LogMetrics()
    registry = CollectorRegistry()
    registry.register(metrics)
    metrics.observe(parse(plog("INFO", "GE") + "\n"), "plog")

    assert sample(registry, "ascend_log_records_total", kind="plog", level="INFO", module="GE") == 1


def test_each_label_set_says_when_it_was_first_counted(registry: CollectorRegistry) -> None:
    """The alert rules tell a series born with a fresh event (created within minutes) from the
    old totals of an agent Prometheus has just begun to scrape (deploy/prometheus/alerts.yml)."""
    now = [1000.0]
    metrics = LogMetrics(registry, wall=lambda: now[0])
    metrics.observe_events([row("hccl.notify-wait-timeout", category="timeout")])
    now[0] = 2000.0
    metrics.observe_events([row("hccl.notify-wait-timeout", category="timeout")])
    metrics.observe_events([row("hccl.exec-timeout", category="timeout")])
    created = {
        sample.labels["rule"]: sample.value
        for family in text_string_to_metric_families(generate_latest(registry).decode())
        if family.name == "ascend_rule_events_created"
        for sample in family.samples
    }
    assert created == {"hccl.notify-wait-timeout": 1000.0, "hccl.exec-timeout": 2000.0}
