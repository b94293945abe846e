"""The real OpenSearch node of the search-engine sink's tests, for the live correlator's."""

from tests.sinks.search.conftest import node

__all__ = ["node"]
