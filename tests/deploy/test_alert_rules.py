"""The Prometheus alert rules and the example Prometheus and Alertmanager configuration in
deploy/prometheus: promtool and amtool accept them, the rules' unit tests pass, every alert is
complete and covered by a case that fires and one that must not, and the rules ask only for
metrics, rule ids and categories that exist."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from tests.deploy.promql_names import exported_metric_names

FOLDER = REPO / "deploy" / "prometheus"
ALERTS = FOLDER / "alerts.yml"
ALERTS_TEST = FOLDER / "alerts_test.yml"
PROMETHEUS_CONFIG = FOLDER / "prometheus.yml"
ALERTMANAGER_CONFIG = FOLDER / "alertmanager.yml"
PACKS = REPO / "src" / "npuwatch" / "rules" / "packs"

SEVERITIES = {"critical", "warning", "info"}
AGENT_PORT = 9816
CORRELATOR_PORT = 9817
AGENT_JOB = "npuwatch"
CORRELATOR_JOB = "npuwatch-correlate"
TIMEOUT_ALERTS = {"AscendCollectiveWatchdogTimeout", "AscendHcclTimeout", "AscendTaskTimeout"}
INCIDENT_ALERT = "AscendCollectiveIncident"

EXPORTED_METRICS = exported_metric_names()
"""What the agent's and the correlator's /metrics can expose (besides Prometheus's own `up`),
read from their collectors: a metric renamed in the code fails here, not silently in
production."""

METRIC_NAME = re.compile(r"(?<![\w:])((?:ascend|npuwatch)_[a-z0-9_]+)(?![\w:])")
BY_LABELS = re.compile(r"\bby\s*\(([^)]*)\)")
ALERTNAME_MATCHER = re.compile(r'^alertname\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"$')
RECORDED_NAME = re.compile(r"(?<![\w:])(npuwatch:[a-z0-9_]+:[a-z0-9_]+)(?![\w:])")
MATCHER = re.compile(r'\b(rule|category)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')

Rule = dict[str, Any]


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def alert_rules() -> list[Rule]:
    return [rule for group in load(ALERTS)["groups"] for rule in group["rules"] if "alert" in rule]


def recording_rules() -> list[Rule]:
    return [rule for group in load(ALERTS)["groups"] for rule in group["rules"] if "record" in rule]


ALERT_NAMES = [rule["alert"] for rule in alert_rules()]


def alert(name: str) -> Rule:
    (rule,) = [rule for rule in alert_rules() if rule["alert"] == name]
    return rule


def cases_of(name: str) -> list[dict[str, Any]]:
    """Every `alert_rule_test` entry of alerts_test.yml about the alert `name`."""
    return [
        case
        for test in load(ALERTS_TEST)["tests"]
        for case in test.get("alert_rule_test", [])
        if case["alertname"] == name
    ]


# Running promtool and amtool (CI installs Debian's prometheus and prometheus-alertmanager)


def tool(name: str, package: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.fail(
            f"{name} is not installed, so deploy/prometheus cannot be checked: install Debian's "
            f"{package} package (apt-get install -y {package})"
        )
    return found


def promtool() -> str:
    return tool("promtool", "prometheus")


def amtool() -> str:
    return tool("amtool", "prometheus-alertmanager")


def run(command: list[str], cwd: Path = FOLDER) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def succeeds(command: list[str], cwd: Path = FOLDER) -> str:
    """Run `command`; fail with everything it printed unless it exits 0. Returns its output."""
    result = run(command, cwd)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"`{' '.join(command)}` exited {result.returncode}:\n{output}"
    return output


@pytest.mark.integration
def test_promtool_check_rules_accepts_the_alerts() -> None:
    succeeds([promtool(), "check", "rules", ALERTS.name])


@pytest.mark.integration
def test_the_unit_tests_of_the_alerts_pass() -> None:
    output = succeeds([promtool(), "test", "rules", ALERTS_TEST.name])
    assert "SUCCESS" in output, output


CHANGES = {
    # A lag threshold ten times higher.
    "NpuwatchReadLagging": (
        "max by (cluster, job, instance) (npuwatch_read_lag_seconds) > 300",
        "max by (cluster, job, instance) (npuwatch_read_lag_seconds) > 3000",
    ),
    # A timeout alert that drops `cluster`: the inhibition by the incident could not match it.
    "AscendHcclTimeout": (
        "sum by (cluster, job, instance, rule) (\n"
        '            npuwatch:ascend_rule_events:increase5m{category="timeout", rule=~"hccl',
        "sum by (job, instance, rule) (\n"
        '            npuwatch:ascend_rule_events:increase5m{category="timeout", rule=~"hccl',
    ),
    # The incident's texts (summary and description) reading the settled series instead of the
    # provisional one.
    "AscendCollectiveIncident": ('provisional="true"}`', 'provisional="false"}`'),
    # A failure of the root-cause engine counted for 5 minutes only: shorter than the `for`.
    "NpuwatchCorrelatorFailing": (
        '{stage="engine"} unless npuwatch_correlate_errors_total offset 15m',
        '{stage="engine"} unless npuwatch_correlate_errors_total offset 5m',
    ),
    # No correlator at all no longer noticed.
    "NpuwatchCorrelatorDown": (
        'up{job="npuwatch-correlate"} == 0\n          or\n          absent(up{job="npuwatch-correlate"})',
        'up{job="npuwatch-correlate"} == 0',
    ),
}
"""Changes to alerts.yml that its unit tests must catch, each with the alert that then fails."""


@pytest.mark.integration
@pytest.mark.parametrize("name", sorted(CHANGES))
def test_the_unit_tests_would_catch_an_alert_that_changed(name: str, tmp_path: Path) -> None:
    before, after = CHANGES[name]
    original = ALERTS.read_text(encoding="utf-8")
    assert before in original, f"{before!r} is not in {ALERTS.name}"
    (tmp_path / ALERTS.name).write_text(original.replace(before, after), encoding="utf-8")
    shutil.copy(ALERTS_TEST, tmp_path / ALERTS_TEST.name)
    result = run([promtool(), "test", "rules", ALERTS_TEST.name], cwd=tmp_path)
    assert result.returncode != 0, result.stdout + result.stderr
    assert f"alertname: {name}" in result.stdout + result.stderr


@pytest.mark.integration
def test_promtool_check_config_accepts_the_prometheus_example(tmp_path: Path) -> None:
    # From another folder: rule_files are found relative to the configuration file.
    output = succeeds([promtool(), "check", "config", str(PROMETHEUS_CONFIG)], cwd=tmp_path)
    assert "1 rule files found" in output, output
    assert f"{len(alert_rules()) + len(recording_rules())} rules found" in output, output


@pytest.mark.integration
def test_amtool_check_config_accepts_the_alertmanager_example() -> None:
    succeeds([amtool(), "check-config", ALERTMANAGER_CONFIG.name])


@pytest.mark.integration
@pytest.mark.parametrize("severity", sorted(SEVERITIES))
def test_alertmanager_routes_each_severity_to_its_webhook(severity: str) -> None:
    output = succeeds(
        [
            amtool(),
            "config",
            "routes",
            "test",
            f"--config.file={ALERTMANAGER_CONFIG.name}",
            "alertname=AscendHcclTimeout",
            "instance=npu-node-01",
            f"severity={severity}",
        ]
    )
    assert output.split() and output.split()[0] == f"npuwatch-{severity}", output


# The example configurations


def scrape_job(name: str) -> dict[str, Any]:
    (job,) = [job for job in load(PROMETHEUS_CONFIG)["scrape_configs"] if job["job_name"] == name]
    return dict(job)


def test_prometheus_scrapes_the_agents_and_the_correlator_and_loads_the_alerts() -> None:
    config = load(PROMETHEUS_CONFIG)
    assert config["rule_files"] == [ALERTS.name]
    assert config["alerting"]["alertmanagers"], "no Alertmanager to send the alerts to"
    for name, port in ((AGENT_JOB, AGENT_PORT), (CORRELATOR_JOB, CORRELATOR_PORT)):
        job = scrape_job(name)
        targets = [target for static in job["static_configs"] for target in static["targets"]]
        assert targets, name
        assert all(target.endswith(f":{port}") for target in targets), targets
        # The same relabelling: `instance` is the host, for the texts and the grouping.
        assert job["relabel_configs"] == scrape_job(AGENT_JOB)["relabel_configs"]


def test_every_target_has_a_cluster_label_shared_by_the_agents_and_their_correlator() -> None:
    clusters = {}
    for name in (AGENT_JOB, CORRELATOR_JOB):
        groups = scrape_job(name)["static_configs"]
        assert all(group.get("labels", {}).get("cluster") for group in groups), name
        clusters[name] = {group["labels"]["cluster"] for group in groups}
    assert clusters[AGENT_JOB] == clusters[CORRELATOR_JOB]


def test_alertmanager_groups_by_alert_and_host_and_routes_by_severity() -> None:
    config = load(ALERTMANAGER_CONFIG)
    route = config["route"]
    assert route["group_by"] == ["alertname", "instance"]
    routed = {matcher for child in route["routes"] for matcher in child["matchers"]}
    assert routed == {f'severity="{severity}"' for severity in SEVERITIES}
    receivers = {receiver["name"]: receiver for receiver in config["receivers"]}
    assert all(receiver["webhook_configs"] for receiver in receivers.values())


def matched_alerts(matchers: list[str]) -> set[str]:
    """The alerts of alerts.yml that every `alertname` matcher of an inhibit rule selects."""
    selected = set(ALERT_NAMES)
    for matcher in matchers:
        found = ALERTNAME_MATCHER.match(matcher)
        assert found is not None, f"not an alertname matcher: {matcher!r}"
        operator, value = found.groups()
        chosen = {
            name
            for name in ALERT_NAMES
            if (operator in ("=", "!=") and name == value)
            or (operator in ("=~", "!~") and re.fullmatch(value, name) is not None)
        }
        selected &= chosen if operator in ("=", "=~") else set(ALERT_NAMES) - chosen
    return selected


def inhibit_rules() -> list[dict[str, Any]]:
    return list(load(ALERTMANAGER_CONFIG)["inhibit_rules"])


def test_the_collective_incident_inhibits_the_per_rank_timeouts_of_its_cluster() -> None:
    (rule,) = [
        rule
        for rule in inhibit_rules()
        if matched_alerts(rule["source_matchers"]) == {INCIDENT_ALERT}
    ]
    assert matched_alerts(rule["target_matchers"]) == TIMEOUT_ALERTS
    assert rule["equal"] == ["cluster"]


def test_the_matchers_of_the_inhibitions_select_alerts_that_exist() -> None:
    for rule in inhibit_rules():
        assert matched_alerts(rule["source_matchers"]), rule
        assert matched_alerts(rule["target_matchers"]), rule
    # Guards for the helper: a regex is matched whole, and a negation takes away.
    assert matched_alerts(['alertname=~"AscendHccl"']) == set()
    assert matched_alerts(['alertname=~"Npuwatch.+"', 'alertname!="NpuwatchAgentDown"']) == {
        name for name in ALERT_NAMES if name.startswith("Npuwatch") and name != "NpuwatchAgentDown"
    }


def test_the_alerts_of_an_inhibition_keep_the_labels_it_matches_on() -> None:
    """An aggregation that drops a label of `equal` (say `sum by (job, instance)` without
    `cluster`) makes an alert Alertmanager can no longer pair, silently."""
    for rule in inhibit_rules():
        alerts = matched_alerts(rule["source_matchers"]) | matched_alerts(rule["target_matchers"])
        for name in sorted(alerts):
            for kept in BY_LABELS.findall(alert(name)["expr"]):
                labels = {label.strip() for label in kept.split(",")}
                missing = set(rule["equal"]) - labels
                assert not missing, f"{name} aggregates `by ({kept})` without {sorted(missing)}"


def test_every_aggregation_by_host_keeps_the_cluster() -> None:
    """Every alert that keeps the host keeps its cluster, for routing and inhibitions alike."""
    for name in ALERT_NAMES:
        for kept in BY_LABELS.findall(alert(name)["expr"]):
            labels = {label.strip() for label in kept.split(",")}
            assert "instance" not in labels or "cluster" in labels, (name, kept)


# Every alert complete and covered


def test_alert_names_are_unique() -> None:
    assert len(ALERT_NAMES) == len(set(ALERT_NAMES)), ALERT_NAMES


def test_the_unit_tests_load_the_alerts() -> None:
    assert load(ALERTS_TEST)["rule_files"] == [ALERTS.name]


@pytest.mark.parametrize("name", ALERT_NAMES)
def test_the_alert_has_a_summary_a_description_and_a_severity(name: str) -> None:
    rule = alert(name)
    annotations = rule.get("annotations", {})
    assert annotations.get("summary", "").strip(), f"{name} has no summary"
    assert annotations.get("description", "").strip(), f"{name} has no description"
    assert rule.get("labels", {}).get("severity") in SEVERITIES, (
        f"{name}: severity label {rule.get('labels', {}).get('severity')!r} "
        f"is not one of {sorted(SEVERITIES)}"
    )


@pytest.mark.parametrize("name", ALERT_NAMES)
def test_the_alert_has_a_case_that_fires_and_one_that_must_not(name: str) -> None:
    cases = cases_of(name)
    assert any(case.get("exp_alerts") for case in cases), (
        f"{name}: no case in {ALERTS_TEST.name} where it fires"
    )
    assert any(not case.get("exp_alerts") for case in cases), (
        f"{name}: no case in {ALERTS_TEST.name} where it must not fire (exp_alerts: [])"
    )


@pytest.mark.parametrize("name", ALERT_NAMES)
def test_the_cases_that_fire_expect_the_exact_severity_and_annotations(name: str) -> None:
    rule = alert(name)
    expected = [expected for case in cases_of(name) for expected in case.get("exp_alerts") or []]
    for alert_expected in expected:
        labels = alert_expected.get("exp_labels", {})
        assert labels.get("severity") == rule["labels"]["severity"], (name, labels)
        assert set(alert_expected.get("exp_annotations", {})) == set(rule["annotations"]), (
            f"{name}: a case expects annotations {sorted(alert_expected.get('exp_annotations', {}))}"
            f", the alert has {sorted(rule['annotations'])}"
        )


# Only names that exist


def expressions_and_texts() -> list[str]:
    texts = [rule["expr"] for rule in recording_rules()]
    for rule in alert_rules():
        texts.append(rule["expr"])
        texts.extend(rule["annotations"].values())
    return texts


def test_the_alerts_use_only_the_metrics_the_agent_exposes() -> None:
    used = {name for text in expressions_and_texts() for name in METRIC_NAME.findall(text)}
    assert used, "no metric found in the rules: is the pattern wrong?"
    assert used <= EXPORTED_METRICS, f"not exposed by the agent: {sorted(used - EXPORTED_METRICS)}"
    recorded = {rule["record"] for rule in recording_rules()}
    referenced = {name for text in expressions_and_texts() for name in RECORDED_NAME.findall(text)}
    assert referenced <= recorded, f"never recorded: {sorted(referenced - recorded)}"


def pack_rules() -> list[Rule]:
    return [rule for pack in sorted(PACKS.glob("*.yaml")) for rule in load(pack)["rules"]]


def selects(expr: str, rule: Rule) -> bool:
    """Whether the `rule` and `category` matchers of `expr` all let events of `rule` through."""
    for label, operator, quoted in MATCHER.findall(expr):
        value = quoted.replace("\\\\", "\\")
        actual = str(rule["id"] if label == "rule" else rule["category"])
        if operator == "=":
            ok = actual == value
        elif operator == "!=":
            ok = actual != value
        elif operator == "=~":
            ok = re.fullmatch(value, actual) is not None
        else:
            ok = re.fullmatch(value, actual) is None
        if not ok:
            return False
    return True


def test_the_alerts_select_rule_ids_and_categories_that_exist() -> None:
    rules = pack_rules()
    ids = {rule["id"] for rule in rules}
    categories = {rule["category"] for rule in rules}
    for rule in alert_rules():
        matchers = MATCHER.findall(rule["expr"])
        for label, operator, value in matchers:
            if operator in ("=", "!="):
                known = ids if label == "rule" else categories
                assert value in known, f"{rule['alert']}: no rule pack has {label} {value!r}"
        if matchers:
            assert any(selects(rule["expr"], pack) for pack in rules), (
                f"{rule['alert']} selects no rule of the packs: {matchers}"
            )


def test_every_timeout_rule_but_the_generic_one_pages() -> None:
    """Watchdog, HCCL and task timeouts: every such rule in the packs is one of the three timeout
    alerts (a new timeout rule that none of them selects fails here)."""
    exprs = [alert(name)["expr"] for name in sorted(TIMEOUT_ALERTS)]
    timeouts = [rule for rule in pack_rules() if rule["category"] == "timeout"]
    specific = [rule for rule in timeouts if not rule.get("fallback")]
    assert specific
    missed = [rule["id"] for rule in specific if not any(selects(e, rule) for e in exprs)]
    assert missed == [], f"timeout rules no alert selects: {missed}"
    for rule in timeouts:
        chosen = [name for name in sorted(TIMEOUT_ALERTS) if selects(alert(name)["expr"], rule)]
        assert len(chosen) <= 1, f"{rule['id']} is in {chosen}"
