"""Elasticsearch and OpenSearch behind one small interface.

The official clients differ in their constructors, their lifecycle APIs (ILM for Elasticsearch,
the ISM plugin for OpenSearch) and the module their bulk helper lives in; everything else the
sink needs (bulk with `create`, index templates, data streams, counts) is the same REST API.
The client libraries are imported here only, when a sink or `npuwatch es` needs one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Flavour = Literal["elasticsearch", "opensearch"]


@dataclass(frozen=True)
class Connection:
    """Where the engine is and how to log in; secrets are read by the caller, never logged."""

    flavour: Flavour
    hosts: tuple[str, ...]
    ca_file: Path | None = None
    verify_certificates: bool = True
    api_key: str | None = None
    username: str | None = None
    password: str | None = None
    timeout_s: float = 30.0

    def __repr__(self) -> str:  # the secrets stay out of logs and tracebacks
        return f"Connection({self.flavour}, {list(self.hosts)})"


class SearchEngine:
    """A client of one flavour, and the few calls the sink makes that differ between them."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.flavour = connection.flavour
        self.client, self._streaming_bulk, self.unreachable = _connect(connection)
        """`unreachable`: the exceptions by which a request failed without any answer (refused
        connection, timeout, TLS): the bulk helpers raise some of them even when asked not to."""

    def close(self) -> None:
        self.client.close()

    def info(self) -> dict[str, Any]:
        return dict(self.client.info())

    def bulk(
        self, actions: Iterable[dict[str, Any]], chunk_docs: int, chunk_bytes: int
    ) -> Iterator[tuple[bool, dict[str, Any]]]:
        """(ok, item) for every action, in order; failures are returned, never raised."""
        return self._streaming_bulk(  # type: ignore[no-any-return]
            self.client,
            actions,
            chunk_size=chunk_docs,
            max_chunk_bytes=chunk_bytes,
            raise_on_error=False,
            raise_on_exception=False,
            max_retries=0,  # the shipper retries, so that it can count and back off itself
            yield_ok=True,
        )

    def put_index_template(self, name: str, body: dict[str, Any]) -> None:
        self.client.indices.put_index_template(name=name, body=body)

    def index_template(self, name: str) -> dict[str, Any] | None:
        if not self.client.indices.exists_index_template(name=name):
            return None
        found = self.client.indices.get_index_template(name=name)
        templates = found.get("index_templates", [])
        return dict(templates[0]["index_template"]) if templates else None

    def put_lifecycle_policy(self, name: str, policy: dict[str, Any]) -> None:
        """Create or replace the policy (`es setup` runs again after an upgrade)."""
        if self.flavour == "elasticsearch":
            self.client.ilm.put_lifecycle(name=name, body=policy)
            return
        # ISM refuses to overwrite a policy (409) unless told which version it replaces.
        existing = self.lifecycle_policy(name)
        params = None
        if existing is not None:
            params = {
                "if_seq_no": existing["_seq_no"],
                "if_primary_term": existing["_primary_term"],
            }
        self.client.transport.perform_request(
            "PUT", f"/_plugins/_ism/policies/{name}", params=params, body=policy
        )

    def lifecycle_policy(self, name: str) -> dict[str, Any] | None:
        try:
            if self.flavour == "elasticsearch":
                return dict(self.client.ilm.get_lifecycle(name=name)[name])
            return dict(
                self.client.transport.perform_request("GET", f"/_plugins/_ism/policies/{name}")
            )
        except Exception as error:
            if status_of(error) == 404:
                return None
            raise

    def count(self, index: str, query: dict[str, Any] | None = None) -> int:
        self.client.indices.refresh(index=index, ignore_unavailable=True)
        body = {"query": query} if query is not None else None
        found = self.client.count(index=index, body=body, ignore_unavailable=True)
        return int(found["count"])


def status_of(error: BaseException) -> int | None:
    """The HTTP status an exception of either client carries, if any."""
    for attribute in ("status_code", "status"):
        value = getattr(error, attribute, None)
        if isinstance(value, int):
            return value
    meta = getattr(error, "meta", None)
    value = getattr(meta, "status", None)
    return value if isinstance(value, int) else None


def _connect(
    connection: Connection,
) -> tuple[Any, Callable[..., Any], tuple[type[Exception], ...]]:
    ca = str(connection.ca_file) if connection.ca_file is not None else None
    if connection.flavour == "elasticsearch":
        from elastic_transport import ConnectionError as NoConnection  # noqa: PLC0415
        from elastic_transport import ConnectionTimeout  # noqa: PLC0415
        from elasticsearch import Elasticsearch  # noqa: PLC0415 - see the module docstring
        from elasticsearch.helpers import streaming_bulk as es_bulk  # noqa: PLC0415

        options: dict[str, Any] = {
            "request_timeout": connection.timeout_s,
            "verify_certs": connection.verify_certificates,
        }
        if ca is not None:
            options["ca_certs"] = ca
        if connection.api_key:
            options["api_key"] = connection.api_key
        elif connection.username:
            options["basic_auth"] = (connection.username, connection.password or "")
        # elasticsearch-py's helper passes only API errors to the caller as failed items
        # (raise_on_exception covers no more): a refused connection or a timeout is raised.
        unreachable = (NoConnection, ConnectionTimeout)
        return Elasticsearch(list(connection.hosts), **options), es_bulk, unreachable
    from opensearchpy import OpenSearch  # noqa: PLC0415
    from opensearchpy.exceptions import ConnectionError as OpenSearchNoConnection  # noqa: PLC0415
    from opensearchpy.helpers import streaming_bulk as os_bulk  # noqa: PLC0415

    options = {"timeout": connection.timeout_s, "verify_certs": connection.verify_certificates}
    if ca is not None:
        options["ca_certs"] = ca
    if connection.api_key:
        options["headers"] = {"Authorization": f"ApiKey {connection.api_key}"}
    elif connection.username:
        options["http_auth"] = (connection.username, connection.password or "")
    if any(host.startswith("https") for host in connection.hosts):
        options["use_ssl"] = True
    return OpenSearch(list(connection.hosts), **options), os_bulk, (OpenSearchNoConnection,)
