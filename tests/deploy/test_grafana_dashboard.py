"""The Grafana dashboard and its provisioning files: well formed, laid out without overlaps, and
asking only for metrics the agent or the cluster correlator exports. That every panel shows data
from a real Prometheus scraping the real agent is tested end to end in test_alert_end_to_end.py,
and the correlator's panels in test_incident_alert.py."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.prometheus_stack import REPOSITORY, binary
from tests.deploy.promql_names import (
    PROMETHEUS_OWN,
    correlator_metric_names,
    exported_metric_names,
    metric_names,
)

GRAFANA = REPOSITORY / "grafana"
DASHBOARD = GRAFANA / "dashboards" / "npuwatch-ascend.json"
_GRID_WIDTH = 24
CORRELATOR_ROW = "Collective incidents (npuwatch correlate)"
"""The row of the cluster correlator's panels: one correlator (or two) per cluster, on hosts of
its own, so the Host variable (the agents) does not filter them; they select its job."""
CORRELATOR_SELECTOR = 'job="npuwatch-correlate"'


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return loaded


def panels() -> list[dict[str, Any]]:
    return list(dashboard()["panels"])


def correlator_panels() -> list[str]:
    """The titles of the panels in the correlator's row (those below it, up to the next row)."""
    titles: list[str] = []
    row = None
    for panel in sorted(panels(), key=lambda panel: (panel["gridPos"]["y"], panel["gridPos"]["x"])):
        if panel["type"] == "row":
            row = panel["title"]
        elif row == CORRELATOR_ROW:
            titles.append(panel["title"])
    return titles


def panel_queries() -> Iterator[tuple[str, str]]:
    """(panel title, PromQL) of every query of every panel."""
    for panel in panels():
        for target in panel.get("targets", []):
            yield panel["title"], target["expr"]


LABEL_VALUES = re.compile(r"label_values\((.+), (\w+)\)")
"""Grafana's `label_values(selector, label)`: the values of `label` in the series `selector`
finds (a call to Prometheus's label API, not PromQL)."""


def variable_queries() -> dict[str, tuple[str, str]]:
    """(selector, label) of each query variable, by name."""
    found = {}
    for variable in dashboard()["templating"]["list"]:
        if variable["type"] == "query":
            match = LABEL_VALUES.fullmatch(variable["definition"])
            assert match is not None, variable["definition"]
            found[variable["name"]] = (match[1], match[2])
    return found


def queries() -> Iterator[tuple[str, str]]:
    """(where, PromQL) of every query: panel targets, variables and annotations."""
    yield from panel_queries()
    for name, (selector, _) in variable_queries().items():
        yield f"variable {name}", selector
    for annotation in dashboard()["annotations"]["list"]:
        yield f"annotation {annotation['name']}", annotation["expr"]


def test_the_dashboard_has_a_stable_uid_a_title_and_unique_panel_ids() -> None:
    board = dashboard()
    assert board["uid"] == "npuwatch-ascend"
    assert board["title"]
    ids = [panel["id"] for panel in panels()]
    assert len(ids) == len(set(ids))
    titles = [panel["title"] for panel in panels()]
    assert len(titles) == len(set(titles))  # the end-to-end test names panels by title


def test_panels_fit_the_grid_without_overlapping() -> None:
    taken: dict[tuple[int, int], str] = {}
    for panel in panels():
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= _GRID_WIDTH, panel["title"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in taken, f"{panel['title']} overlaps {taken[(x, y)]}"
                taken[(x, y)] = panel["title"]


def test_every_query_uses_the_chosen_prometheus_data_source() -> None:
    chosen = {"type": "prometheus", "uid": "${datasource}"}
    for panel in panels():
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == chosen, panel["title"]
        assert panel["targets"], f"{panel['title']} has no query"
        for target in panel["targets"]:
            assert target["datasource"] == chosen, panel["title"]
    (source,) = [v for v in dashboard()["templating"]["list"] if v["type"] == "datasource"]
    assert source["name"] == "datasource" and source["query"] == "prometheus"


def test_every_query_asks_for_metrics_the_agent_exports() -> None:
    exported = exported_metric_names() | PROMETHEUS_OWN
    asked = {(where, name) for where, expr in queries() for name in metric_names(expr)}
    unknown = sorted((where, name) for where, name in asked if name not in exported)
    assert unknown == []
    # Device, profiling, log, agent and correlator metrics each have panels.
    names = {name for _, name in asked}
    for prefix in (
        "ascend_npu_",
        "ascend_op_",
        "ascend_log_",
        "ascend_rule_",
        "npuwatch_",
        "ascend_collective_incident",
        "npuwatch_correlate_",
    ):
        assert any(name.startswith(prefix) for name in names), prefix


def as_grafana_sends_it(expr: str, host: str, rate_interval: str = "1m") -> str:
    """A query with the dashboard's variables replaced as Grafana does: one host as a regex (its
    backslashes escaped for the PromQL string), every NPU, and a rate interval."""
    pattern = re.escape(host).replace("\\", "\\\\")
    return (
        expr.replace("$instance", pattern)
        .replace("$npu", ".*")
        .replace("$__rate_interval", rate_interval)
    )


@pytest.mark.integration
def test_promtool_parses_every_query_of_the_dashboard(tmp_path: Path) -> None:
    """Each query as a recording rule, so that Prometheus's own parser reads it."""
    rules = [
        {
            "record": f"dashboard:query_{number}",
            "expr": as_grafana_sends_it(expr, "npu-node-01.example"),
        }
        for number, (_, expr) in enumerate(queries())
    ]
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    checked = subprocess.run(
        [binary("promtool", "prometheus"), "check", "rules", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(rules)} rules found" in checked.stdout


def test_the_names_of_a_query_are_its_metrics_only() -> None:
    expr = (
        'sum by (instance, code) ((foo_total{instance=~"$instance"} unless foo_total offset '
        '$__rate_interval) or increase(bar_seconds_total{a="b{c}"}[5m])) > 0.5 and on (job) up'
    )
    assert metric_names(expr) == {"foo_total", "bar_seconds_total", "up"}


def test_the_exported_names_would_catch_a_misspelt_metric() -> None:
    exported = exported_metric_names()
    assert "ascend_npu_hbm_used_bytes" in exported
    assert "ascend_log_errors_total" in exported
    assert "ascend_npu_hbm_use_bytes" not in exported


def test_every_query_filters_by_the_host_variable() -> None:
    """Choosing hosts at the top narrows every panel (vector(0) fallbacks aside), but for the
    correlator's: see the test below."""
    exempt = set(correlator_panels())
    for where, expr in queries():
        if where == "variable instance" or where in exempt:
            continue
        for selector in re.findall(r"\{[^}]*\}", expr):
            assert 'instance=~"$instance"' in selector, (where, expr)


def test_the_correlator_panels_select_its_job_and_its_metrics_only() -> None:
    """The exception to the host filter, made explicit: the panels of the correlator's row ask
    only for its metrics, each from its job, and never filter by the agents' hosts."""
    titles = correlator_panels()
    assert titles == [
        "Open collective incidents",
        "Root causes of open incidents",
        "Time to first verdict",
        "Correlator read lag",
    ]
    correlator_only = correlator_metric_names() - {"npuwatch_build_info"}
    for title, expr in panel_queries():
        names = metric_names(expr)
        if title in titles:
            assert names and names <= correlator_only, (title, sorted(names))
            selectors = re.findall(r"\{[^}]*\}", expr)
            assert len(selectors) == len(names), (title, expr)  # every metric, a selector
            assert all(CORRELATOR_SELECTOR in selector for selector in selectors), (title, expr)
            assert "$instance" not in expr, (title, expr)
        else:
            assert not names & correlator_only, f"{title} shows the correlator outside its row"


@pytest.mark.parametrize(
    "path", sorted((GRAFANA / "provisioning").rglob("*.yml")), ids=lambda path: path.name
)
def test_the_provisioning_files_are_grafana_version_1_files(path: Any) -> None:
    content = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert content["apiVersion"] == 1
    if path.parent.name == "dashboards":
        (provider,) = content["providers"]
        assert provider["type"] == "file" and provider["options"]["path"]
    else:
        (source,) = content["datasources"]
        assert source["type"] == "prometheus" and source["url"].startswith("http")
