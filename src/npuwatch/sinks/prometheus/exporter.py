"""The metrics endpoint: `/metrics` from a registry passed in, over HTTP or HTTPS, in a thread.

Paths: `/metrics` (prometheus_client's WSGI app: text or OpenMetrics by the Accept header, gzip,
`name[]` filters), `/` (a page that links to it) and `/-/healthy`. With basic authentication
configured every path asks for it, as Prometheus's own endpoints do.

The default address is `:9816`, every interface (IPv6 and IPv4 where the host has both): the
agent runs on each NPU host and Prometheus scrapes it from another machine, as it scrapes
node_exporter on `:9100`. Port 9816 is not used by the common exporters. To keep the endpoint
local, listen on `127.0.0.1:9816`; to expose it, prefer TLS and basic authentication (the web
configuration file) or a firewall rule.

Each request runs in its own thread; with TLS the handshake runs there too, so that a client that
stalls in the handshake holds up only itself.
"""

from __future__ import annotations

import logging
import socket
import socketserver
import ssl
import threading
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from prometheus_client import CollectorRegistry, make_wsgi_app

from npuwatch.setting_values import listen_address
from npuwatch.sinks.prometheus.web_config import WebSecurity

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

    from npuwatch.sinks.prometheus.passwords import BasicAuth

log = logging.getLogger(__name__)

DEFAULT_PORT = 9816
DEFAULT_LISTEN = f":{DEFAULT_PORT}"
REQUEST_TIMEOUT_S = 30.0
"""A connection that sends nothing (or stalls in the TLS handshake) this long is closed."""

_LANDING_PAGE = b"""<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>npuwatch</title></head>
<body>
<h1>npuwatch</h1>
<p>Log and telemetry agent for Ascend NPU hosts.</p>
<ul><li><a href="metrics">Metrics</a></li><li><a href="-/healthy">Health</a></li></ul>
</body>
</html>
"""


class MetricsServer:
    """Serves a registry's metrics from its own thread until stopped."""

    def __init__(
        self,
        registry: CollectorRegistry,
        listen: str = DEFAULT_LISTEN,
        security: WebSecurity | None = None,
    ) -> None:
        self.listen = listen
        self._host, self._port = listen_address(listen)
        self._security = security or WebSecurity()
        self._app = metrics_app(registry, self._security.auth)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        """The host and port bound (the port the system chose, when 0 was asked for)."""
        if self._server is None:
            return self._host, self._port
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        """The metrics URL, for messages."""
        host, port = self.address
        scheme = "https" if self._security.tls is not None else "http"
        return f"{scheme}://{f'[{host}]' if ':' in host else host}:{port}/metrics"

    def start(self) -> None:
        """Bind the address and serve; raises OSError when the address cannot be bound."""
        family, address, dual_stack = _bind_target(self._host, self._port)
        try:
            server = _Server(family, address, dual_stack, self._security.tls, self._app)
        except OSError as error:
            reason = error.strerror or str(error)
            raise OSError(error.errno, f"cannot listen on {self.listen}: {reason}") from error
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, args=(0.5,), name="npuwatch-metrics", daemon=True
        )
        self._thread.start()
        log.info("serving metrics on %s", self.url)

    def stop(self) -> None:
        """Stop serving and close the socket (requests in flight finish in their threads)."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        server.shutdown()
        server.server_close()
        thread.join()
        self._thread = None


def metrics_app(registry: CollectorRegistry, auth: BasicAuth | None = None) -> WSGIApplication:
    """The WSGI application behind the endpoint."""
    metrics = make_wsgi_app(registry)

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> list[bytes]:
        if auth is not None and not auth.allows(environ.get("HTTP_AUTHORIZATION")):
            challenge = ("WWW-Authenticate", 'Basic realm="npuwatch", charset="UTF-8"')
            return _reply(start_response, "401 Unauthorized", b"Unauthorized\n", [challenge])
        path = environ.get("PATH_INFO") or "/"
        if path == "/metrics":
            output: list[bytes] = metrics(environ, start_response)
            return output
        if environ.get("REQUEST_METHOD") != "GET":
            return _reply(
                start_response, "405 Method Not Allowed", b"Use GET\n", [("Allow", "GET")]
            )
        if path == "/":
            return _reply(start_response, "200 OK", _LANDING_PAGE, content_type="text/html")
        if path == "/-/healthy":
            return _reply(start_response, "200 OK", b"npuwatch is healthy.\n")
        return _reply(start_response, "404 Not Found", b"Not found: try /metrics\n")

    return app


def _reply(
    start_response: StartResponse,
    status: str,
    body: bytes,
    headers: list[tuple[str, str]] | None = None,
    content_type: str = "text/plain",
) -> list[bytes]:
    start_response(
        status,
        [("Content-Type", f"{content_type}; charset=utf-8"), ("Content-Length", str(len(body)))]
        + (headers or []),
    )
    return [body]


def _bind_target(host: str, port: int) -> tuple[socket.AddressFamily, Any, bool]:
    """The address family, socket address and whether to accept IPv4 on an IPv6 socket."""
    if host == "":
        if socket.has_dualstack_ipv6():
            return socket.AF_INET6, ("::", port), True
        return socket.AF_INET, ("0.0.0.0", port), False
    family, _, _, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    return family, address, False


class _QuietHandler(WSGIRequestHandler):
    """Serves one connection; scrapes every few seconds are not worth a log line each."""

    timeout = REQUEST_TIMEOUT_S

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        family: socket.AddressFamily,
        address: Any,
        dual_stack: bool,
        tls: ssl.SSLContext | None,
        app: WSGIApplication,
    ) -> None:
        self.address_family = family
        self._dual_stack = dual_stack
        self._tls = tls
        super().__init__(address, _QuietHandler)
        self.set_app(app)

    def server_bind(self) -> None:
        if self._dual_stack:
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        # Not HTTPServer.server_bind: it looks the host's name up in DNS, which may hang.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)
        self.setup_environ()

    def finish_request(self, request: Any, client_address: Any) -> None:
        if self._tls is None:
            super().finish_request(request, client_address)
            return
        request.settimeout(REQUEST_TIMEOUT_S)
        secure = self._tls.wrap_socket(request, server_side=True)  # the handshake, here
        try:
            super().finish_request(secure, client_address)
        finally:
            self.shutdown_request(secure)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that went away or failed the TLS handshake is not the agent's problem.
        log.debug("metrics request from %s failed", client_address, exc_info=True)
