"""OpenSearch 2, through opensearch-py: the ISM plugin deletes the data after a while."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from npuwatch.sinks.search.engine import Connection, Flavour, SearchEngine, status_of
from npuwatch.sinks.search.fast_json import opensearch_serializer
from npuwatch.sinks.search.streams import TEMPLATE_PRIORITY


class OpenSearchEngine(SearchEngine):
    flavour: ClassVar[Flavour] = "opensearch"

    @staticmethod
    def _connect(
        connection: Connection,
    ) -> tuple[Any, Callable[..., Any], tuple[type[Exception], ...]]:
        from opensearchpy import OpenSearch  # noqa: PLC0415 - imported when used
        from opensearchpy.exceptions import ConnectionError as NoConnection  # noqa: PLC0415
        from opensearchpy.helpers import streaming_bulk  # noqa: PLC0415

        options: dict[str, Any] = {
            "timeout": connection.timeout_s,
            "verify_certs": connection.verify_certificates,
            # Unverified TLS is said once, at start, in npuwatch's words (settings.py); the
            # client's own warning would add a second, and urllib3's one a request.
            "ssl_show_warn": False,
        }
        if connection.ca_file is not None:
            options["ca_certs"] = str(connection.ca_file)
        if connection.api_key:
            options["headers"] = {"Authorization": f"ApiKey {connection.api_key}"}
        elif connection.username:
            options["http_auth"] = (connection.username, connection.password or "")
        if any(host.startswith("https") for host in connection.hosts):
            options["use_ssl"] = True
        serializer = opensearch_serializer()
        if serializer is not None:
            options["serializer"] = serializer
        return OpenSearch(list(connection.hosts), **options), streaming_bulk, (NoConnection,)

    @staticmethod
    def template_settings(namespace: str) -> dict[str, Any]:
        # ISM attaches its policy by index pattern (the policy's ism_template), not by a setting.
        return {}

    @staticmethod
    def lifecycle_policy_body(delete_after_days: int, namespace: str) -> dict[str, Any]:
        return {
            "policy": {
                "description": f"npuwatch: delete Ascend logs after {delete_after_days} days",
                "default_state": "hot",
                "states": [
                    {
                        "name": "hot",
                        "actions": [
                            {"rollover": {"min_index_age": "1d", "min_primary_shard_size": "50gb"}}
                        ],
                        "transitions": [
                            {
                                "state_name": "delete",
                                "conditions": {"min_index_age": f"{delete_after_days}d"},
                            }
                        ],
                    },
                    {"name": "delete", "actions": [{"delete": {}}], "transitions": []},
                ],
                "ism_template": [
                    {
                        "index_patterns": [f".ds-logs-ascend.*-{namespace}-*"],
                        "priority": TEMPLATE_PRIORITY,
                    }
                ],
            }
        }

    def put_lifecycle_policy(self, name: str, policy: dict[str, Any]) -> None:
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
            return dict(
                self.client.transport.perform_request("GET", f"/_plugins/_ism/policies/{name}")
            )
        except Exception as error:
            if status_of(error) == 404:
                return None
            raise

    @staticmethod
    def lifecycle_unsupported(error: BaseException, delete_after_days: int) -> str | None:
        if status_of(error) not in (400, 404):
            return None
        return (
            "this OpenSearch has no Index State Management plugin; data will not be deleted "
            f"after {delete_after_days} days: install opensearch-index-management, or delete "
            "old backing indices yourself"
        )
