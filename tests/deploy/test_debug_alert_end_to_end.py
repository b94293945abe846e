"""End to end, the debugging tools' alerts: the real agent imports a training monitor's folder
with a NaN and an msSanitizer report with errors, a real Prometheus (Debian's package) scrapes
it and evaluates deploy/prometheus/alerts.yml unchanged, and a real Alertmanager posts
AscendTrainingNaN and AscendSanitizerError, as alertmanager.yml routes them, to a webhook, with
the rank and the kind an operator starts from.

As in test_alert_end_to_end.py, a counter series born at its first import has no increase();
alerts.yml counts such a series only when the agent was already scraped 30 minutes before (the
debugging tools' rules look back 30 minutes). Rather than scrape for half an hour first, this
Prometheus starts with that history of `up` backfilled by promtool. The importer's settle time
is short, and the fixture outputs' files are old already, so they are imported at the agent's
first scan.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from npuwatch.debug_tools import digest_output
from tests.deploy.prometheus_stack import (
    INSTANCE,
    REPOSITORY,
    AlertingStack,
    LoggedProcess,
    WebhookReceiver,
    agent_environment,
    fetch_json,
    poll,
    start_alerting_stack,
)
from tests.real_servers import real_server

pytestmark = pytest.mark.integration

DEBUG_OUTPUTS = REPOSITORY / "fixtures" / "debug_tools"
MONITOR_FOLDER = DEBUG_OUTPUTS / "monitor" / "two_ranks"
SANITIZER_REPORT = DEBUG_OUTPUTS / "sanitizer" / "memcheck.log"
NAN_ALERT = "AscendTrainingNaN"
SANITIZER_ALERT = "AscendSanitizerError"
HISTORY_S = 35 * 60
"""The `up` history backfilled: more than the 30 minutes the rules look back."""
FIRING_WITHIN = 60.0
"""Seconds from the agent's start to the alerts firing in Prometheus (expected: about 5: the
first scan, a scrape and an evaluation, 1 s each)."""
DELIVERED_WITHIN = 90.0
"""Seconds from the agent's start to Alertmanager posting them to the webhook."""


def nan_ranks() -> dict[str, int]:
    """The ranks whose latest monitor statistics hold NaN/inf, and how many rows: what the
    monitor folder's digest gives the agent's ascend_monitor_nan_values."""
    ranks = digest_output("monitor", MONITOR_FOLDER).figures["ranks"]
    return {str(rank): nans for rank, _, nans, _ in ranks if nans}


def sanitizer_errors() -> dict[str, int]:
    """The report's errors by kind: what the agent's ascend_sanitizer_errors_total counts."""
    errors: dict[str, int] = digest_output("sanitizer", SANITIZER_REPORT).figures["errors"]
    return errors


def start_agent(folder: Path, port: int) -> LoggedProcess:
    """The agent watching a folder where a training job's monitor wrote its statistics (rank 1
    went NaN at step 37) and msSanitizer its memcheck report."""
    logs, debug = folder / "logs", folder / "debug"
    logs.mkdir()
    shutil.copytree(MONITOR_FOLDER, debug / "monitor_output")
    shutil.copy2(SANITIZER_REPORT, debug / "memcheck.log")
    config = folder / "npuwatch.toml"
    config.write_text(
        "[agent]\n"
        'host_name = "npu-node-01"\n'
        f"state_directory = {json.dumps(str(folder / 'state'))}\n"
        "[sources]\n"
        f"roots = [{json.dumps(str(logs))}]\n"
        "[devices]\n"
        "enabled = false\n"
        "[debug_tools]\n"
        f"paths = [{json.dumps(str(debug))}]\n"
        'settle = "1s"\n'
        'scan_interval = "1s"\n'
        "[sinks.prometheus]\n"
        f'listen = "127.0.0.1:{port}"\n',
        encoding="utf-8",
    )
    command = [sys.executable, "-m", "npuwatch", "agent", "--config", str(config)]
    return LoggedProcess("npuwatch agent", command, folder / "agent.log", agent_environment())


@pytest.fixture(scope="module")
@real_server("Prometheus and Alertmanager (Debian packages) fed by an agent importing outputs")
def debug_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AlertingStack]:
    folder = tmp_path_factory.mktemp("debug-alert-end-to-end")
    with ExitStack() as cleanup:
        webhook = WebhookReceiver()
        cleanup.callback(webhook.close)
        yield start_alerting_stack(
            cleanup,
            folder,
            webhook,
            HISTORY_S,
            lambda port: start_agent(folder, port),
            ("ascend_monitor", "ascend_sanitizer", "ascend_debug"),
        )


def firing_alerts(
    stack: AlertingStack, name: str, label: str, values: set[str]
) -> list[dict[str, Any]]:
    """The alerts `name` firing in Prometheus once there is one for each of `values` of
    `label`, sorted by it; fails after FIRING_WITHIN of the agent's start."""

    def all_firing() -> list[dict[str, Any]] | None:
        alerts = fetch_json(f"{stack.prometheus_url}/api/v1/alerts")["data"]["alerts"]
        mine = [
            alert
            for alert in alerts
            if alert["labels"]["alertname"] == name and alert["state"] == "firing"
        ]
        return mine if {alert["labels"].get(label) for alert in mine} >= values else None

    alerts, _ = poll(all_firing, stack.seconds_left(FIRING_WITHIN))
    took = time.monotonic() - stack.agent_started
    assert alerts is not None, (
        f"{name} was not firing for every {label} of {sorted(values)} {took:.0f} s after the "
        f"agent started\n{stack.diagnostics()}"
    )
    print(f"{name} firing in Prometheus {took:.1f} s after the agent started")
    return sorted(alerts, key=lambda alert: str(alert["labels"].get(label)))


def delivered(stack: AlertingStack, name: str, label: str, values: set[str]) -> dict[str, Any]:
    """The alerts `name` Alertmanager posted, by the value of `label` (path and alert), once
    every one of `values` was; fails after DELIVERED_WITHIN of the agent's start."""

    def posted() -> dict[str, Any] | None:
        found: dict[str, Any] = {}
        for path, payload in stack.webhook.posts():
            for alert in payload.get("alerts", []) if isinstance(payload, dict) else []:
                labels = alert["labels"]
                if labels.get("alertname") == name and alert["status"] == "firing":
                    found[str(labels.get(label))] = (path, alert)
        return found if found.keys() >= values else None

    found, _ = poll(posted, stack.seconds_left(DELIVERED_WITHIN))
    took = time.monotonic() - stack.agent_started
    assert found is not None, (
        f"no webhook post of {name} for every {label} of {sorted(values)} {took:.0f} s after "
        f"the agent started\n{stack.diagnostics()}"
    )
    print(f"{name} posted to the webhook {took:.1f} s after the agent started")
    return found


def test_a_nan_in_the_training_monitor_fires_ascend_training_nan_for_its_rank(
    debug_stack: AlertingStack,
) -> None:
    ranks = nan_ranks()
    assert ranks == {"1": 3}  # rank 1's three statistics rows of step 37
    (alert,) = firing_alerts(debug_stack, NAN_ALERT, "rank", set(ranks))
    assert alert["labels"] == {
        "alertname": NAN_ALERT,
        "severity": "critical",
        "job": "npuwatch",
        "instance": INSTANCE,
        "rank": "1",
    }
    assert alert["annotations"]["summary"] == f"NaN/Inf in training on rank 1 ({INSTANCE})"
    assert "npuwatch grep --module MONITOR,PRECISION" in alert["annotations"]["description"]

    posts = delivered(debug_stack, NAN_ALERT, "rank", set(ranks))
    assert posts.keys() == {"1"}
    path, posted = posts["1"]
    assert path == "/npuwatch/critical"  # alertmanager.yml routes severity=critical there
    assert posted["labels"]["rank"] == "1"
    assert posted["labels"]["instance"] == INSTANCE
    assert posted["annotations"]["summary"] == f"NaN/Inf in training on rank 1 ({INSTANCE})"


def test_the_errors_of_an_mssanitizer_report_fire_ascend_sanitizer_error_by_kind(
    debug_stack: AlertingStack,
) -> None:
    errors = sanitizer_errors()
    assert sum(errors.values()) == 9 and "illegal_read" in errors
    alerts = firing_alerts(debug_stack, SANITIZER_ALERT, "kind", set(errors))
    assert [alert["labels"]["kind"] for alert in alerts] == sorted(errors)
    for alert in alerts:
        kind = alert["labels"]["kind"]
        assert alert["labels"] == {
            "alertname": SANITIZER_ALERT,
            "severity": "warning",
            "job": "npuwatch",
            "instance": INSTANCE,
            "kind": kind,
        }
        assert float(alert["value"]) == errors[kind], kind
        assert alert["annotations"]["summary"] == (
            f"New {kind} error from msSanitizer/msaicerr on {INSTANCE}"
        )
        assert alert["annotations"]["description"].startswith(
            f"{errors[kind]} new `{kind}` error(s) in the msSanitizer reports"
        )

    posts = delivered(debug_stack, SANITIZER_ALERT, "kind", set(errors))
    assert posts.keys() == set(errors)
    for kind, (path, posted) in posts.items():
        assert path == "/npuwatch/warning", kind  # alertmanager.yml's route for warnings
        assert posted["labels"]["kind"] == kind
        assert posted["labels"]["instance"] == INSTANCE
