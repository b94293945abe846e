"""The metrics endpoint, scraped for real over HTTP and HTTPS on the loopback interface."""

from __future__ import annotations

import base64
import http.client
import shutil
import socket
import ssl
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from npuwatch.handoff import EventRow
from npuwatch.metrics import SelfMetrics
from npuwatch.sinks.prometheus.exporter import MetricsServer
from npuwatch.sinks.prometheus.log_metrics import LogMetrics
from npuwatch.sinks.prometheus.web_config import WebSecurity, load_web_config
from tests.agent.harness import Harness
from tests.sinks.prometheus.conftest import Certificate, tree_batches

HASH = "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"  # password U*U
Serve = Callable[..., MetricsServer]


def basic(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def get(
    url: str, headers: dict[str, str] | None = None, context: ssl.SSLContext | None = None
) -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, dict(error.headers), error.read().decode()


@pytest.fixture
def registry() -> CollectorRegistry:
    """The agent's registry: its own metrics and the `ascend_*` collector, fed a fixture tree."""
    registry = CollectorRegistry()
    metrics = SelfMetrics(registry)
    metrics.lines_read.inc(57)
    log_metrics = LogMetrics(registry)
    for batch in tree_batches("hccl-timeout"):
        log_metrics.observe(batch.records, batch.kind)
    log_metrics.observe_events(
        [
            EventRow(
                id="1", timestamp_us=None, rule="hccl.notify-wait-timeout", category="timeout",
                severity="error", level="ERROR", logger="HCCL", code="EI0002", device=None,
                host=None, path=None, file_key=None, offset=None, pid=None, count=1, document="{}",
            )
        ]
    )  # fmt: skip
    return registry


@pytest.fixture
def serve(registry: CollectorRegistry) -> Iterator[Serve]:
    """Start servers on the registry; every one is stopped after the test."""
    started: list[MetricsServer] = []

    def start(listen: str = "127.0.0.1:0", security: WebSecurity | None = None) -> MetricsServer:
        server = MetricsServer(registry, listen, security)
        server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def web_config(tmp_path: Path, text: str) -> WebSecurity:
    path = tmp_path / "web.yml"
    path.write_text(text)
    path.chmod(0o600)  # it may hold password hashes: private, as the agent asks
    return load_web_config(path)


@pytest.mark.integration
def test_a_scrape_returns_the_log_metrics_and_the_agents_own(serve: Serve) -> None:
    server = serve()

    status, headers, text = get(server.url)

    assert status == 200
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    families = {family.name: family for family in text_string_to_metric_families(text)}
    records = {
        (point.labels["kind"], point.labels["level"], point.labels["module"]): point.value
        for point in families["ascend_log_records"].samples
    }
    assert records[("plog", "ERROR", "HCCL")] > 0
    assert records[("other", "ERROR", "none")] == 21  # the job logs: 7 files of 3 records
    assert sum(records.values()) == sum(len(b.records) for b in tree_batches("hccl-timeout"))
    errors = {
        (point.labels["code"], point.labels["module"]): point.value
        for point in families["ascend_log_errors"].samples
    }
    assert errors == {("EI0002", "HCCL"): 7, ("EI0002", "none"): 7}
    [event] = families["ascend_rule_events"].samples
    assert event.labels == {"rule": "hccl.notify-wait-timeout", "severity": "error", "category": "timeout"}  # fmt: skip
    assert families["npuwatch_lines_read"].samples[0].value == 57


@pytest.mark.integration
def test_the_scrape_passes_promtool_check_metrics(serve: Serve) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian package `prometheus`)")
    _, _, text = get(serve().url)

    result = subprocess.run(
        [promtool, "check", "metrics"],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout + result.stderr == ""


@pytest.mark.integration
def test_the_landing_page_links_to_the_metrics(serve: Serve) -> None:
    server = serve()

    status, headers, page = get(server.url.removesuffix("metrics"))

    assert status == 200
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert '<a href="metrics">' in page


@pytest.mark.integration
def test_the_health_path_says_healthy(serve: Serve) -> None:
    status, _, text = get(serve().url.replace("/metrics", "/-/healthy"))

    assert (status, text) == (200, "npuwatch is healthy.\n")


@pytest.mark.integration
def test_an_unknown_path_is_not_found_and_other_methods_are_not_allowed(serve: Serve) -> None:
    server = serve()
    host, port = server.address

    assert get(server.url.replace("/metrics", "/nope"))[0] == 404
    connection = http.client.HTTPConnection(host, port, timeout=10)
    connection.request("POST", "/-/healthy", body=b"x")
    response = connection.getresponse()
    assert (response.status, response.getheader("Allow")) == (405, "GET")
    connection.close()


@pytest.mark.integration
def test_metrics_are_served_over_tls(
    serve: Serve, tmp_path: Path, certificate: Certificate
) -> None:
    security = web_config(
        tmp_path,
        f"tls_server_config: {{cert_file: {certificate.cert_file}, "
        f"key_file: {certificate.key_file}}}\n",
    )
    server = serve(security=security)
    trusting = ssl.create_default_context(cafile=str(certificate.cert_file))

    assert server.url.startswith("https://127.0.0.1:")
    status, _, text = get(server.url, context=trusting)
    assert status == 200
    assert "ascend_log_records_total" in text
    with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
        get(server.url, context=ssl.create_default_context())


@pytest.mark.integration
def test_plain_http_to_the_tls_port_gets_no_metrics(
    serve: Serve, tmp_path: Path, certificate: Certificate
) -> None:
    security = web_config(
        tmp_path,
        f"tls_server_config: {{cert_file: {certificate.cert_file}, "
        f"key_file: {certificate.key_file}}}\n",
    )
    server = serve(security=security)
    trusting = ssl.create_default_context(cafile=str(certificate.cert_file))

    with pytest.raises((http.client.HTTPException, ConnectionError, urllib.error.URLError)):
        get(server.url.replace("https://", "http://"))
    assert get(server.url, context=trusting)[0] == 200  # the failed handshake hurt no one


@pytest.mark.integration
def test_basic_authentication_lets_in_only_a_known_user_with_the_password(
    serve: Serve, tmp_path: Path
) -> None:
    server = serve(security=web_config(tmp_path, f"basic_auth_users:\n  prometheus: '{HASH}'\n"))
    healthy = server.url.replace("/metrics", "/-/healthy")

    status, headers, _ = get(server.url)
    assert status == 401
    assert headers["WWW-Authenticate"].startswith('Basic realm="npuwatch"')
    assert get(server.url, basic("prometheus", "wrong"))[0] == 401
    assert get(server.url, basic("grafana", "U*U"))[0] == 401
    assert get(healthy)[0] == 401
    assert get(server.url, basic("prometheus", "U*U"))[0] == 200
    assert get(healthy, basic("prometheus", "U*U"))[0] == 200


@pytest.mark.integration
def test_tls_and_basic_authentication_work_together(
    serve: Serve, tmp_path: Path, certificate: Certificate
) -> None:
    security = web_config(
        tmp_path,
        f"tls_server_config: {{cert_file: {certificate.cert_file}, "
        f"key_file: {certificate.key_file}}}\nbasic_auth_users: {{prometheus: '{HASH}'}}\n",
    )
    server = serve(security=security)
    trusting = ssl.create_default_context(cafile=str(certificate.cert_file))

    assert get(server.url, context=trusting)[0] == 401
    assert get(server.url, basic("prometheus", "U*U"), context=trusting)[0] == 200


@pytest.mark.integration
def test_an_address_in_use_is_an_error_that_names_it(serve: Serve) -> None:
    _, port = serve().address

    with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{port}: "):
        serve(f"127.0.0.1:{port}")


@pytest.mark.integration
def test_every_interface_takes_ipv4_and_ipv6_where_the_host_has_both(serve: Serve) -> None:
    server = serve(":0")
    _, port = server.address

    assert get(f"http://127.0.0.1:{port}/-/healthy")[0] == 200
    if socket.has_dualstack_ipv6():
        assert get(f"http://[::1]:{port}/-/healthy")[0] == 200


@pytest.mark.integration
def test_stopping_frees_the_port_and_ends_the_thread(registry: CollectorRegistry) -> None:
    def serving() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "npuwatch-metrics"}

    others = serving()  # other servers of the session (agents started by other tests)
    server = MetricsServer(registry, "127.0.0.1:0")
    server.start()
    host, port = server.address
    assert len(serving() - others) == 1

    server.stop()
    server.stop()  # twice is harmless

    with pytest.raises(urllib.error.URLError):
        get(f"http://{host}:{port}/metrics")
    assert not serving() - others


NOT_METRICS = ["/metrics/", "/metricsx", "/metrics/extra", "/x/metrics", "/index.html",
               "/favicon.ico", "/api/v1/query", "/debug/pprof/"]  # fmt: skip


@pytest.mark.integration
@pytest.mark.parametrize("path", NOT_METRICS)
def test_only_the_metrics_path_serves_metrics_every_other_path_is_not_found(
    serve: Serve, path: str
) -> None:
    host, port = serve().address
    connection = http.client.HTTPConnection(host, port, timeout=10)
    connection.request("GET", path)
    response = connection.getresponse()
    body = response.read().decode()
    connection.close()
    assert (response.status, body) == (404, "Not found: try /metrics\n")


@pytest.mark.integration
def test_the_agent_serves_metrics_on_the_metrics_path_and_points_there_from_the_root(
    tmp_path: Path,
) -> None:
    harness = Harness(tmp_path)
    agent = harness.start()
    try:
        assert agent.metrics_server is not None
        base = agent.metrics_server.url.removesuffix("metrics")
        status, _, text = get(f"{base}metrics")
        assert status == 200 and "npuwatch_build_info" in text
        status, headers, page = get(base)
        assert (status, headers["Content-Type"]) == (200, "text/html; charset=utf-8")
        assert '<a href="metrics">' in page and "npuwatch_build_info" not in page
        assert get(f"{base}anything")[0] == 404
    finally:
        harness.stop()
