"""Elasticsearch 8, through the official client: ILM deletes the data after a while."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from npuwatch.sinks.search.engine import Connection, Flavour, SearchEngine, status_of
from npuwatch.sinks.search.fast_json import elasticsearch_serializer
from npuwatch.sinks.search.streams import policy_name


class ElasticsearchEngine(SearchEngine):
    flavour: ClassVar[Flavour] = "elasticsearch"

    @staticmethod
    def _connect(
        connection: Connection,
    ) -> tuple[Any, Callable[..., Any], tuple[type[Exception], ...]]:
        from elastic_transport import ConnectionError as NoConnection  # noqa: PLC0415
        from elastic_transport import ConnectionTimeout  # noqa: PLC0415
        from elasticsearch import Elasticsearch  # noqa: PLC0415 - imported when used
        from elasticsearch.helpers import streaming_bulk  # noqa: PLC0415

        options: dict[str, Any] = {
            "request_timeout": connection.timeout_s,
            "verify_certs": connection.verify_certificates,
            # Unverified TLS is said once, at start, in npuwatch's words (settings.py); the
            # client's own warning would add a second, and urllib3's one a request.
            "ssl_show_warn": False,
        }
        if connection.ca_file is not None:
            options["ca_certs"] = str(connection.ca_file)
        if connection.api_key:
            options["api_key"] = connection.api_key
        elif connection.username:
            options["basic_auth"] = (connection.username, connection.password or "")
        serializer = elasticsearch_serializer()
        if serializer is not None:
            options["serializer"] = serializer
        # elasticsearch-py's helper passes only API errors to the caller as failed items
        # (raise_on_exception covers no more): a refused connection or a timeout is raised.
        unreachable = (NoConnection, ConnectionTimeout)
        return Elasticsearch(list(connection.hosts), **options), streaming_bulk, unreachable

    @staticmethod
    def template_settings(namespace: str) -> dict[str, Any]:
        return {"index.lifecycle.name": policy_name(namespace)}

    @staticmethod
    def lifecycle_policy_body(delete_after_days: int, namespace: str) -> dict[str, Any]:
        return {
            "policy": {
                "phases": {
                    "hot": {
                        "actions": {"rollover": {"max_age": "1d", "max_primary_shard_size": "50gb"}}
                    },
                    "delete": {"min_age": f"{delete_after_days}d", "actions": {"delete": {}}},
                },
                "_meta": {"managed_by": "npuwatch"},
            }
        }

    def put_lifecycle_policy(self, name: str, policy: dict[str, Any]) -> None:
        self.client.ilm.put_lifecycle(name=name, body=policy)

    def lifecycle_policy(self, name: str) -> dict[str, Any] | None:
        try:
            return dict(self.client.ilm.get_lifecycle(name=name)[name])
        except Exception as error:
            if status_of(error) == 404:
                return None
            raise
