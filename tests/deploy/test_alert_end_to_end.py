"""End to end, the path that wakes an operator: the real agent tails a CANN log tree, a real
Prometheus (Debian's package) scrapes it and evaluates deploy/prometheus/alerts.yml unchanged,
and a real Alertmanager routes the alert, as alertmanager.yml does, to a webhook.

Two delays are by design, and shape the test:

- The agent counts a rule event in `ascend_rule_events_total` once the event's dedupe window has
  closed (60 s for the HCCL timeout rules) and its context after it is complete (5 records, or
  its file quiet for the idle-flush time). The alert therefore fires about a minute after the
  line is written.
- A counter series born at its first event has no increase(); alerts.yml counts such a series
  when the agent was already scraped 5 minutes before, or when the agent counted it minutes ago
  (its `_created` sample). This Prometheus starts scraping the agent as the test begins, with no
  history: the first timeout alerts within the minute all the same (before, it needed 5 minutes
  of scraping first, and a timeout in them never alerted).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from npuwatch.parsers.npu_smi import parse_npu_smi
from tests.deploy.prometheus_stack import (
    INSTANCE,
    REPOSITORY,
    AlertingStack,
    LoggedProcess,
    WebhookReceiver,
    agent_environment,
    fetch,
    fetch_json,
    poll,
    start_alerting_stack,
)
from tests.deploy.test_grafana_dashboard import (
    as_grafana_sends_it,
    correlator_panels,
    panel_queries,
    variable_queries,
)
from tests.npu_smi_samples import FAKE_NPU_SMI, load_doc_samples, table_only, with_hbm_used
from tests.real_servers import real_server

pytestmark = pytest.mark.integration

PROFILING_RUNS = REPOSITORY / "fixtures" / "profiling" / "torch_2rank"
DEBUG_OUTPUTS = REPOSITORY / "fixtures" / "debug_tools"

PACK = REPOSITORY / "src" / "npuwatch" / "rules" / "packs" / "30-timeouts.yaml"
RULE = "hccl.notify-wait-timeout"
ALERT = "AscendHcclTimeout"
PID = 3300
FIRING_WITHIN = 120.0
"""Seconds from writing the line to the alert firing in Prometheus (expected: about 65)."""
DELIVERED_WITHIN = 150.0
"""Seconds from writing the line to Alertmanager posting the alert to the webhook."""
HBM_ALERT = "AscendNpuHbmPressure"
HBM_USED_MB = 62259
"""Of 65536 MiB: 95%."""
HBM_FIRING_WITHIN = 420.0
"""Seconds from the agent's start to AscendNpuHbmPressure firing: its `for: 5m`, the first
poll and scrape, and slack (expected: about 305)."""

CANN_TIME = re.compile(r"\d{4}-\d\d-\d\d-\d\d:\d\d:\d\d\.\d{3}\.\d{3}")
WATCHDOG_RULE = "hccl.watchdog-timeout"
WATCHDOG_ALERT = "AscendCollectiveWatchdogTimeout"
C10_TIME = re.compile(r"\[E\d{3,4} \d\d:\d\d:\d\d\.\d{9}")


def cann_time(moment: datetime) -> str:
    """A time as CANN writes it in a plog: 2025-09-14-09:37:31.402.500."""
    micro = moment.microsecond
    return moment.strftime("%Y-%m-%d-%H:%M:%S.") + f"{micro // 1000:03d}.{micro % 1000:03d}"


def plog_record(module: str, source: str, text: str, moment: datetime) -> str:
    return f"[INFO] {module}({PID},python3):{cann_time(moment)} [{source}] {text}"


def timeout_line(moment: datetime) -> str:
    """The rule's own plog example of an HCCL notify-wait timeout, written at `moment`."""
    line = rule_example(RULE, "[ERROR] HCCL(")
    assert f"HCCL({PID}," in line, line
    return CANN_TIME.sub(cann_time(moment), line)


def rule_example(rule_id: str, starts: str) -> str:
    pack = yaml.safe_load(PACK.read_text(encoding="utf-8"))
    (rule,) = [rule for rule in pack["rules"] if rule["id"] == rule_id]
    (line,) = [line for line in rule["examples"]["match"] if line.startswith(starts)]
    return str(line)


def watchdog_line(moment: datetime) -> str:
    """The rule's own example of torch_npu's ProcessGroupHCCL watchdog taking a rank down (a
    c10 line of the training job's console log), written at `moment`."""
    line = rule_example(WATCHDOG_RULE, "[rank5]:[E")
    stamp = f"[E{moment.month}{moment.day:02d} {moment:%H:%M:%S}.{moment.microsecond * 1000:09d}"
    assert C10_TIME.search(line), line
    return C10_TIME.sub(stamp, line)


def synchronize_lines(moment: datetime, first_task: int, count: int) -> list[str]:
    """What another thread of the training process logs meanwhile."""
    return [
        plog_record(
            "RUNTIME",
            "stream.cc:1421",
            f"3301 StreamSynchronize: stream_id=2, task_id={task}, device_id=0, flip_num=0",
            moment,
        )
        for task in range(first_task, first_task + count)
    ]


def append(path: Path, lines: list[str]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(line + "\n" for line in lines))


@dataclass(kw_only=True)
class Stack(AlertingStack):
    """The agent, Prometheus, Alertmanager and the webhook, running for the module, and the
    two logs the test writes to."""

    plog: Path
    console: Path


def start_agent(folder: Path, port: int, started: datetime) -> LoggedProcess:
    """The agent on a log tree where a training process (pid 3300) is already logging, on a
    host whose NPU 0 has 95% of its HBM in use (the fake npu-smi replays real sample 1.1 of the
    formats doc with that one value changed)."""
    npu_smi_output = folder / "npu-smi.out"
    npu_smi_output.write_text(
        with_hbm_used(table_only(load_doc_samples()["1.1"]), npu=0, used_mb=HBM_USED_MB),
        encoding="utf-8",
    )
    logs, state = folder / "logs", folder / "state"
    plog_folder = logs / "debug" / "plog"
    plog_folder.mkdir(parents=True)
    append(plog_path(folder, started), synchronize_lines(started, 100, 3))
    console_path(folder).parent.mkdir(parents=True)
    console_path(folder).touch()  # the job's console log, followed from the start
    profiling = folder / "profiling"
    shutil.copytree(PROFILING_RUNS, profiling / "job-42")  # for the dashboard's profiling panels
    debug = folder / "debug"  # for the training-health row: a monitor folder and a report
    shutil.copytree(DEBUG_OUTPUTS / "monitor" / "two_ranks", debug / "monitor_output")
    shutil.copy(DEBUG_OUTPUTS / "sanitizer" / "memcheck.log", debug / "memcheck.log")
    config = folder / "npuwatch.toml"
    config.write_text(
        "[agent]\n"
        'host_name = "npu-node-01"\n'
        f"state_directory = {json.dumps(str(state))}\n"
        'timezone = "UTC"\n'  # the zone the test writes CANN's times in
        "[sources]\n"
        f"roots = [{json.dumps(str(logs))}]\n"
        "[devices]\n"
        f"npu_smi_command = {json.dumps(f'{FAKE_NPU_SMI} info')}\n"
        'interval = "2s"\n'
        "[profiling]\n"
        f"paths = [{json.dumps(str(profiling))}]\n"
        'settle = "1s"\n'
        'scan_interval = "1s"\n'
        "[debug_tools]\n"
        f"paths = [{json.dumps(str(debug))}]\n"
        'settle = "1s"\n'
        'scan_interval = "1s"\n'
        "[sinks.prometheus]\n"
        f'listen = "127.0.0.1:{port}"\n',
        encoding="utf-8",
    )
    command = [sys.executable, "-m", "npuwatch", "agent", "--config", str(config)]
    environment = agent_environment()
    environment["NPUWATCH_FAKE_NPU_SMI_OUTPUT"] = str(npu_smi_output)
    return LoggedProcess("npuwatch agent", command, folder / "agent.log", environment)


def console_path(folder: Path) -> Path:
    return folder / "logs" / "job" / "train-rank5.log"


def plog_path(folder: Path, started: datetime) -> Path:
    stamp = started.strftime("%Y%m%d%H%M%S") + f"{started.microsecond // 1000:03d}"
    return folder / "logs" / "debug" / "plog" / f"plog-{PID}_{stamp}.log"


@pytest.fixture(scope="module")
@real_server("Prometheus and Alertmanager (Debian packages) fed by a real agent")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("alert-end-to-end")
    started = datetime.now(timezone.utc)
    with ExitStack() as cleanup:
        webhook = WebhookReceiver()
        cleanup.callback(webhook.close)
        running = start_alerting_stack(
            cleanup,
            folder,
            webhook,
            0,  # no history of scraping the agent: its first timeout alerts all the same
            lambda port: start_agent(folder, port, started),
            ("ascend_rule_events", "ascend_npu_hbm", "npuwatch_npu_smi"),
        )
        stack = Stack(
            **vars(running), plog=plog_path(folder, started), console=console_path(folder)
        )
        scraping, _ = poll(lambda: True if agent_scraped(stack) else None, timeout=30)
        assert scraping, f"Prometheus does not scrape the agent\n{stack.diagnostics()}"
        yield stack


def agent_scraped(stack: Stack) -> bool:
    targets = fetch_json(f"{stack.prometheus_url}/api/v1/targets")["data"]["activeTargets"]
    return any(target["health"] == "up" for target in targets)


@pytest.fixture(scope="module")
def timeout_written(stack: Stack) -> float:
    """Append the timeout line, and what the process logs after it, to the plog; return when
    (time.monotonic)."""
    now = datetime.now(timezone.utc)
    after = now + timedelta(milliseconds=5)
    append(stack.plog, [timeout_line(now), *synchronize_lines(after, 103, 5)])
    append(stack.console, [watchdog_line(now)])
    return time.monotonic()


def seconds_left(written: float, within: float) -> float:
    return max(0.0, within - (time.monotonic() - written))


def firing(stack: Stack, name: str, rule: str) -> dict[str, Any] | None:
    """The alert `name` for `rule` if Prometheus has it firing."""
    alerts = fetch_json(f"{stack.prometheus_url}/api/v1/alerts")["data"]["alerts"]
    for alert in alerts:
        labels = alert["labels"]
        if labels["alertname"] == name and labels.get("rule") == rule:
            return alert if alert["state"] == "firing" else None
    return None


def firing_after(stack: Stack, name: str, rule: str, written: float) -> dict[str, Any]:
    """The alert, once firing in Prometheus within FIRING_WITHIN of the line being written."""
    alert, _ = poll(lambda: firing(stack, name, rule), seconds_left(written, FIRING_WITHIN))
    took = time.monotonic() - written
    assert alert is not None, (
        f"{name} for {rule} was not firing in Prometheus {took:.0f} s after the line was "
        f"written\n{stack.diagnostics()}"
    )
    print(f"{name} firing in Prometheus {took:.1f} s after the line was written")
    return alert


def test_an_hccl_notify_wait_timeout_in_a_plog_fires_ascend_hccl_timeout_in_prometheus(
    stack: Stack, timeout_written: float
) -> None:
    alert = firing_after(stack, ALERT, RULE, timeout_written)
    assert alert["labels"] == {
        "alertname": ALERT,
        "severity": "critical",
        "job": "npuwatch",
        "instance": INSTANCE,
        "rule": RULE,
    }
    assert alert["annotations"]["summary"] == f"HCCL timeout on {INSTANCE} ({RULE})"


def test_a_collective_watchdog_timeout_in_the_console_log_fires_its_alert(
    stack: Stack, timeout_written: float
) -> None:
    """The HCCL watchdog-timeout line of torch_npu (written with the HCCL line, so that both
    alerts ripen together)."""
    alert = firing_after(stack, WATCHDOG_ALERT, WATCHDOG_RULE, timeout_written)
    assert alert["labels"] == {
        "alertname": WATCHDOG_ALERT,
        "severity": "critical",
        "job": "npuwatch",
        "instance": INSTANCE,
        "rule": WATCHDOG_RULE,
    }


def test_alertmanager_posts_the_firing_alert_to_the_critical_webhook(
    stack: Stack, timeout_written: float
) -> None:
    def delivered() -> tuple[str, dict[str, Any], dict[str, Any]] | None:
        for path, payload in stack.webhook.posts():
            for alert in payload.get("alerts", []) if isinstance(payload, dict) else []:
                labels = alert["labels"]
                if labels.get("alertname") == ALERT and labels.get("rule") == RULE:
                    return path, payload, alert
        return None

    found, _ = poll(delivered, seconds_left(timeout_written, DELIVERED_WITHIN))
    took = time.monotonic() - timeout_written
    assert found is not None, (
        f"no webhook post of {ALERT} for {RULE} {took:.0f} s after the line was written\n"
        f"{stack.diagnostics()}"
    )
    print(f"{ALERT} posted to the webhook {took:.1f} s after the line was written")
    path, payload, alert = found
    assert path == "/npuwatch/critical"  # alertmanager.yml routes severity=critical there
    assert payload["status"] == "firing"
    assert alert["status"] == "firing"
    assert alert["labels"]["severity"] == "critical"
    assert alert["labels"]["instance"] == INSTANCE
    assert alert["annotations"]["summary"] == f"HCCL timeout on {INSTANCE} ({RULE})"


def test_an_npu_at_95_percent_hbm_fires_ascend_npu_hbm_pressure_after_five_minutes(
    stack: Stack,
) -> None:
    def firing() -> dict[str, Any] | None:
        alerts: list[dict[str, Any]]
        alerts = fetch_json(f"{stack.prometheus_url}/api/v1/alerts")["data"]["alerts"]
        for alert in alerts:
            if alert["labels"]["alertname"] == HBM_ALERT and alert["state"] == "firing":
                return alert
        return None

    pressure = fetch(stack.agent_url).decode()
    assert 'ascend_npu_hbm_used_bytes{chip="0",name="910B1",npu="0"}' in pressure, (
        stack.diagnostics()
    )
    alert, _ = poll(firing, seconds_left(stack.agent_started, HBM_FIRING_WITHIN))
    took = time.monotonic() - stack.agent_started
    assert alert is not None, (
        f"{HBM_ALERT} was not firing {took:.0f} s after the agent started\n{stack.diagnostics()}"
    )
    print(f"{HBM_ALERT} firing in Prometheus {took:.1f} s after the agent started")
    assert alert["labels"] == {
        "alertname": HBM_ALERT,
        "severity": "warning",
        "job": "npuwatch",
        "instance": INSTANCE,
        "npu": "0",
        "chip": "0",
        "name": "910B1",
    }
    assert alert["annotations"]["summary"] == f"HBM 95% full on NPU 0 chip 0 of {INSTANCE}"

    def delivered() -> str | None:
        for path, payload in stack.webhook.posts():
            for posted in payload.get("alerts", []) if isinstance(payload, dict) else []:
                if posted["labels"].get("alertname") == HBM_ALERT:
                    return path
        return None

    path, _ = poll(delivered, 30)
    assert path == "/npuwatch/warning", stack.diagnostics()


EMPTY_HERE = {
    "Shipped": "no search-engine sink in this stack",
    "Shipping backlog": "no search-engine sink in this stack",
    # test_incident_alert.py runs them with a correlator.
    **dict.fromkeys(correlator_panels(), "no cluster correlator in this stack"),
}
"""Panels with nothing to show in this stack, and why; every other panel must show data."""
ZERO_HERE = {"Read lag", "Chips not OK", "Sanitizer and AI Core errors"}
"""Panels whose data may be all zeros here (the agent keeps up with a few lines; the chips may
all be OK; the debugging tools' outputs are imported at the start, so their counts may be
older than the rate interval); every other panel must show a value above 0. The rate interval is 5 minutes, so
that the lines and events of the last minutes all show at once."""


def test_every_panel_of_the_grafana_dashboard_shows_the_agents_data_in_prometheus(
    stack: Stack,
) -> None:
    """Runs after the alerts above: by then the stack has rule events, npu-smi readings and an
    imported profiling run. A few lines are added for the panels of rates, one of them coded
    for the error-code panels."""
    now = datetime.now(timezone.utc)
    coded = plog_record("RUNTIME", "api_c.c:98", "EE9999: Inner Error! rtStreamSynchronize", now)
    # More of the lines the training process has been writing since the start, and an error.
    append(stack.plog, [*synchronize_lines(now, 200, 3), coded.replace("[INFO]", "[ERROR]", 1)])
    chips = parse_npu_smi(table_only(load_doc_samples()["1.1"])).chips
    empty_here = dict(EMPTY_HERE)
    if all(chip.healthy for chip in chips):
        empty_here["Chips with health not OK"] = "every chip of the replayed npu-smi sample is OK"
    zero_here = set(ZERO_HERE)
    if not any(chip.aicore_ratio for chip in chips):
        zero_here.add("AI Core utilisation")  # the sample's chips are idle

    def answers() -> dict[str, list[Any]]:
        results: dict[str, list[Any]] = {}
        for title, expr in panel_queries():
            query = urllib.parse.urlencode({"query": as_grafana_sends_it(expr, INSTANCE, "5m")})
            reply = fetch_json(f"{stack.prometheus_url}/api/v1/query?{query}")
            assert reply["status"] == "success", (title, expr, reply)
            results[title] = results.get(title, []) + reply["data"]["result"]
        return results

    def missing(results: dict[str, list[Any]]) -> list[str]:
        """Panels without a series, or (unless zeros are expected) without a value above 0."""
        return sorted(
            title
            for title, series in results.items()
            if title not in empty_here
            and (
                not series
                or (title not in zero_here and all(float(one["value"][1]) == 0 for one in series))
            )
        )

    def coded_error_shown(results: dict[str, list[Any]]) -> bool:
        return any(
            one["metric"].get("code") == "EE9999" and float(one["value"][1]) > 0
            for one in results["Error codes"]
        )

    def all_shown() -> dict[str, list[Any]] | None:
        results = answers()
        return None if missing(results) or not coded_error_shown(results) else results

    # The rule events of the coded line are counted when their 60 s dedupe window closes.
    results, _ = poll(all_shown, 150)
    if results is None:
        now_shown = answers()
        pytest.fail(
            f"dashboard panels without data: {missing(now_shown)}; EE9999 in Error codes: "
            f"{coded_error_shown(now_shown)}\n{stack.diagnostics()}"
        )
    for title, reason in empty_here.items():
        assert results[title] == [], f"{title} shows data although {reason}"

    # The dashboard's variables: hosts from npuwatch_build_info, NPUs from the device gauges.
    variables = variable_queries()
    for name, expected in (("instance", INSTANCE), ("npu", "0")):
        selector, label = variables[name]
        match = urllib.parse.urlencode({"match[]": as_grafana_sends_it(selector, INSTANCE)})
        values = fetch_json(f"{stack.prometheus_url}/api/v1/label/{label}/values?{match}")["data"]
        assert expected in values, (name, values)
