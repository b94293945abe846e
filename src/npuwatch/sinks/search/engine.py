"""A search engine as the sink and `npuwatch es` see it: the few calls they make.

Elasticsearch and OpenSearch answer the same REST API for everything the sink needs (bulk with
`create`, index templates, data streams, counts); they differ in their client libraries, in how
data is deleted after a while (ILM for Elasticsearch, the ISM plugin for OpenSearch) and in how
a template names that policy. Each engine is a subclass in a module of its own
(elasticsearch_engine.py, opensearch_engine.py) and `engines.py` chooses one. The client
libraries are imported by those modules only, when a sink or `npuwatch es` needs one.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

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
    """A client of one engine; subclasses connect and manage the lifecycle policy."""

    flavour: ClassVar[Flavour]
    client: Any
    unreachable: tuple[type[Exception], ...]
    """The exceptions by which a request failed without any answer (refused connection,
    timeout, TLS): the bulk helpers raise some of them even when asked not to."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.client, self._streaming_bulk, self.unreachable = self._connect(connection)

    # -- what differs between engines ---------------------------------------------------------

    @staticmethod
    def _connect(
        connection: Connection,
    ) -> tuple[Any, Callable[..., Any], tuple[type[Exception], ...]]:
        """The client, its bulk helper, and the exceptions that mean "no answer"."""
        raise NotImplementedError

    @staticmethod
    def template_settings(namespace: str) -> dict[str, Any]:
        """Index settings a template adds for the engine's lifecycle management."""
        raise NotImplementedError

    @staticmethod
    def lifecycle_policy_body(delete_after_days: int, namespace: str) -> dict[str, Any]:
        """The policy that rolls the data streams over and deletes them after the days."""
        raise NotImplementedError

    def put_lifecycle_policy(self, name: str, policy: dict[str, Any]) -> None:
        """Create or replace the policy (`es setup` runs again after an upgrade)."""
        raise NotImplementedError

    def lifecycle_policy(self, name: str) -> dict[str, Any] | None:
        """The installed policy, or None when there is none."""
        raise NotImplementedError

    @staticmethod
    def lifecycle_unsupported(error: BaseException, delete_after_days: int) -> str | None:
        """Why the engine cannot keep a lifecycle policy at all, when `error` says so."""
        return None

    # -- the same REST API on both ------------------------------------------------------------

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
            max_retries=0,  # the sink retries, so that it can count and back off itself
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

    def put_pipeline(self, name: str, body: dict[str, Any]) -> None:
        self.client.ingest.put_pipeline(id=name, body=body)

    def pipeline(self, name: str) -> dict[str, Any] | None:
        try:
            return dict(self.client.ingest.get_pipeline(id=name)[name])
        except Exception as error:
            if status_of(error) == 404:
                return None
            raise

    def search(self, index: str, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The hits of one search request (a missing index has none)."""
        found = self.client.search(index=index, body=body, ignore_unavailable=True)
        return list(found["hits"]["hits"])

    def get(self, index: str, id_: str) -> dict[str, Any] | None:
        """The document with its `_seq_no` and `_primary_term`, or None when there is none."""
        try:
            return dict(self.client.get(index=index, id=id_))
        except Exception as error:
            if status_of(error) == 404:
                return None
            raise

    def put_document(
        self,
        index: str,
        id_: str,
        document: dict[str, Any],
        version: tuple[int, int] | None,
    ) -> tuple[int, int]:
        """Write a document only if it is still at `version` (its seq_no and primary term), or
        only if there is none yet (`version` None); the new version. A document changed or made
        meanwhile by another writer raises the client's conflict error (status_of gives 409)."""
        # refresh=wait_for: searched for (incident list, Kibana) as soon as the call returns.
        if version is None:
            answer = self.client.index(
                index=index, id=id_, body=document, op_type="create", refresh="wait_for"
            )
        else:
            answer = self.client.index(
                index=index,
                id=id_,
                body=document,
                if_seq_no=version[0],
                if_primary_term=version[1],
                refresh="wait_for",
            )
        return int(answer["_seq_no"]), int(answer["_primary_term"])

    def refresh(self, index: str) -> None:
        self.client.indices.refresh(index=index, ignore_unavailable=True)

    def count(
        self, index: str, query: dict[str, Any] | None = None, starting_wait_s: float = 10.0
    ) -> int:
        """Documents of `index` (a comma-separated list may name streams not made yet). An index
        a write has just made answers 503 ("all shards failed") while the node starts its
        shard: asked again for up to `starting_wait_s`."""
        body = {"query": query} if query is not None else None
        deadline = time.monotonic() + starting_wait_s
        while True:
            try:
                self.client.indices.refresh(index=index, ignore_unavailable=True)
                found = self.client.count(index=index, body=body, ignore_unavailable=True)
                return int(found["count"])
            except Exception as error:
                if status_of(error) != 503 or time.monotonic() >= deadline:
                    raise
            time.sleep(0.2)


CLIENT_LOGGERS = ("elastic_transport", "elasticsearch", "opensearch", "urllib3")


def quiet_client_logs() -> None:
    """Leave the clients' own log lines to errors: they log every request at INFO (`POST
    …/_bulk [status:200 …]`, a line a second in the journal of every host) and every failed one
    at WARNING with a traceback, many a second while an engine is down. The sink and the
    correlator say once, in a line, what went wrong and what they do about it."""
    for name in CLIENT_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)


def status_of(error: BaseException) -> int | None:
    """The HTTP status an exception of either client carries, if any."""
    for attribute in ("status_code", "status"):
        value = getattr(error, attribute, None)
        if isinstance(value, int):
            return value
    meta = getattr(error, "meta", None)
    value = getattr(meta, "status", None)
    return value if isinstance(value, int) else None


def describe_error(error: BaseException) -> str:
    """An engine error in one line: its HTTP status, if any, and the first line of its text;
    a failed connection by its cause alone ("connection refused"), not the client's nesting of
    exceptions that repeats it."""
    status = status_of(error)
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    if status is None:
        reason = connection_failure(text)
        if reason is not None:
            return reason
    return f"HTTP {status}: {text}" if status is not None else text


_ERRNO_TEXT = re.compile(r"\[Errno -?[0-9]+\] ([^)\]\n]+?)(?:'|\)|\]|$)")
_CONNECTION_WORDS = (
    ("CERTIFICATE_VERIFY_FAILED", "TLS certificate not trusted (set ca_certs to its CA)"),
    ("certificate verify failed", "TLS certificate not trusted (set ca_certs to its CA)"),
    ("WRONG_VERSION_NUMBER", "TLS to a server that does not speak it (http:// or https://?)"),
    ("timed out", "timed out"),
    ("Name or service not known", "host name not found"),
    ("nodename nor servname", "host name not found"),
    ("Temporary failure in name resolution", "host name not found (DNS)"),
    ("Connection refused", "connection refused (is it running, and on that port?)"),
    ("Connection reset", "connection reset"),
    ("RemoteDisconnected", "the server closed the connection"),
)


def connection_failure(text: str) -> str | None:
    """Why a connection failed, in a few words, when `text` (a client's exception) says so."""
    for words, reason in _CONNECTION_WORDS:
        if words in text:
            return reason
    found = _ERRNO_TEXT.search(text)
    if found is not None:
        return found[1].strip().lower()
    return None
