"""The smallest honest adapter that lets the official Elasticsearch client talk to the test's
OpenSearch node: a local HTTP proxy that changes only what the client checks or sends as
Elasticsearch-only, and nothing of what the sink's requests mean.

- Requests: the client's compatibility media types (`application/vnd.elasticsearch+json;
  compatible-with=8`, `+x-ndjson`) become the plain ones OpenSearch accepts.
- Responses: `X-Elastic-Product: Elasticsearch` is added (the client refuses to talk to a
  server without it).

What this covers: the `elasticsearch` flavour's client construction, bulk helper, item
classification, index templates and data streams, which are the same REST API in both engines.
What it does not: Elasticsearch's own server behaviour, and ILM (`_ilm/policy`), which OpenSearch
does not have.
"""

from __future__ import annotations

import http.client
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

_VENDOR = re.compile(r"application/vnd\.elasticsearch\+([\w-]+)(;\s*compatible-with=\d+)?")


class ElasticsearchFace:
    """Serves on a free local port, forwarding to `target` (http://host:port)."""

    def __init__(self, target: str) -> None:
        parts = urlsplit(target)
        host, port = parts.hostname or "127.0.0.1", parts.port or 9200
        handler = _handler(host, port)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def _plain(value: str) -> str:
    return _VENDOR.sub(lambda match: f"application/{match.group(1)}", value)


def _handler(host: str, port: int) -> type[BaseHTTPRequestHandler]:
    class Forward(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            return

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
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
            self.send_response(response.status)
            for name, value in response.getheaders():
                if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                    self.send_header(name, value)
            self.send_header("X-Elastic-Product", "Elasticsearch")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    return Forward
