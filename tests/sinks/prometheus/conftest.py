"""Fixture trees parsed as the agent reads them, a registry to read values back, and a
self-signed certificate for the TLS tests."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from npuwatch.parsers.stream import StreamParser
from npuwatch.records import Record
from tests.conftest import TREES, utc_clock


@dataclass(frozen=True)
class Batch:
    """The records of one fixture file and its log kind, as the journal thread commits them."""

    path: str
    kind: str
    records: list[Record]


def tree_batches(name: str) -> list[Batch]:
    """Every log file of a fixture tree, parsed in UTC, with paths as if the tree were `/`."""
    root = TREES / name
    batches = []
    for file in sorted(root.rglob("*.log")):
        parser = StreamParser(utc_clock(), path="/" + file.relative_to(root).as_posix())
        records = parser.feed(file.read_bytes()) + parser.flush()
        batches.append(Batch(parser.source.path or "", parser.source.kind, records))
    return batches


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def samples(registry: CollectorRegistry, name: str) -> dict[tuple[str, ...], float]:
    """Every sample of `name`, keyed by its label values in label order."""
    found = {}
    for family in registry.collect():
        for point in family.samples:
            if point.name == name:
                found[tuple(point.labels.values())] = point.value
    return found


@dataclass(frozen=True)
class Certificate:
    cert_file: Path
    key_file: Path


@pytest.fixture(scope="session")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> Certificate:
    """A self-signed certificate for 127.0.0.1 and localhost, made by the openssl command."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "metrics.crt", folder / "metrics.key"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-days", "2", "-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert),
            "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )  # fmt: skip
    return Certificate(cert, key)
