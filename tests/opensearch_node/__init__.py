"""Embedded single-node OpenSearch for integration tests (see README.md)."""
