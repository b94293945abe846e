"""The one place a search engine is chosen by its flavour: adding an engine is its module and a
line here."""

from __future__ import annotations

from npuwatch.sinks.search.elasticsearch_engine import ElasticsearchEngine
from npuwatch.sinks.search.engine import Connection, Flavour, SearchEngine
from npuwatch.sinks.search.opensearch_engine import OpenSearchEngine

ENGINES: dict[Flavour, type[SearchEngine]] = {
    "elasticsearch": ElasticsearchEngine,
    "opensearch": OpenSearchEngine,
}


def engine_class(flavour: Flavour) -> type[SearchEngine]:
    return ENGINES[flavour]


def connect(connection: Connection) -> SearchEngine:
    """A client of the connection's engine (no request is made yet)."""
    return engine_class(connection.flavour)(connection)
