"""The smallest honest adapter that lets the official Elasticsearch client talk to the test's
OpenSearch node: a local HTTP proxy that changes only what the client checks or sends as
Elasticsearch-only, and nothing of what the sink's requests mean.

- Requests: the client's compatibility media types (`application/vnd.elasticsearch+json;
  compatible-with=8`, `+x-ndjson`) become the plain ones OpenSearch accepts.
- Responses: `X-Elastic-Product: Elasticsearch` is added (the client refuses to talk to a
  server without it).

A test may also put a `gate` in front, standing for what sits between agents and engines in
real deployments (an authenticating or size-limiting reverse proxy): it sees each request's
method, path and body size and may answer it with a status of its own instead of forwarding.

What this covers: the `elasticsearch` flavour's client construction, bulk helper, item
classification, index templates and data streams, which are the same REST API in both engines.
What it does not: Elasticsearch's own server behaviour, and ILM (`_ilm/policy`), which OpenSearch
does not have.
"""

from __future__ import annotations

import contextlib
import http.client
import re
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

_VENDOR = re.compile(r"application/vnd\.elasticsearch\+([\w-]+)(;\s*compatible-with=\d+)?")


Gate = Callable[[str, str, int], int | None]
"""(method, path, body bytes) → a status to answer instead of forwarding, or None to forward."""


class ElasticsearchFace:
    """Serves on `port` (default: a free one), forwarding to `target` (http://host:port)."""

    def __init__(self, target: str, port: int = 0, gate: Gate | None = None) -> None:
        parts = urlsplit(target)
        host, target_port = parts.hostname or "127.0.0.1", parts.port or 9200
        self._connections: set[socket.socket] = set()
        handler = _handler(host, target_port, gate, self._connections)
        self._server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        """Stop listening and cut the kept-alive connections too, as a stopped engine would."""
        self._server.shutdown()
        self._server.server_close()
        for connection in list(self._connections):
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        self._thread.join()


def _plain(value: str) -> str:
    return _VENDOR.sub(lambda match: f"application/{match.group(1)}", value)


def _handler(
    host: str, port: int, gate: Gate | None, connections: set[socket.socket]
) -> type[BaseHTTPRequestHandler]:
    class Forward(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            connections.add(self.connection)

        def finish(self) -> None:
            connections.discard(self.connection)
            super().finish()

        def log_message(self, format: str, *args: object) -> None:
            return

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            refused = gate(self.command, self.path, length) if gate else None
            if refused is not None:
                self._answer(
                    refused, b'{"error":"refused by the gate in front","status":%d}' % refused
                )
                return
            headers = {
                name: _plain(value)
                for name, value in self.headers.items()
                if name.lower() not in ("host", "content-length", "connection")
            }
            connection = http.client.HTTPConnection(host, port, timeout=60)
            try:
                connection.request(self.command, self.path, body=body, headers=headers)
                response = connection.getresponse()
                payload = response.read()
            finally:
                connection.close()
            self._answer(response.status, payload, response.getheaders())

        def _answer(
            self, status: int, payload: bytes, headers: list[tuple[str, str]] | None = None
        ) -> None:
            self.send_response(status)
            for name, value in headers or [("Content-Type", "application/json")]:
                if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                    self.send_header(name, value)
            self.send_header("X-Elastic-Product", "Elasticsearch")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    return Forward
