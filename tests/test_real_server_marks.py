"""The suite's own rule: a test that asks for a real server is marked `integration`, so that
`python -m pytest -m "not integration"` runs without Java, Prometheus or systemd."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

CONFTEST = """
import pytest

from tests.real_servers import real_server, unmarked_real_server_tests


@pytest.fixture(scope="session")
@real_server("a search engine")
def engine_node():
    yield "http://127.0.0.1:9200"


def pytest_collection_modifyitems(config, items):
    problems = unmarked_real_server_tests(items)
    if problems:
        raise pytest.UsageError("\\n".join(problems))
"""

TESTS = """
import pytest


@pytest.fixture
def client(engine_node):
    return engine_node


def test_that_forgot_its_mark(client):
    assert client


@pytest.mark.integration
def test_that_is_marked(client):
    assert client


def test_without_a_server():
    assert True
"""


def collect(folder: Path) -> subprocess.CompletedProcess[str]:
    (folder / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (folder / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n    integration: real servers\n", encoding="utf-8"
    )
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_an_unmarked_test_that_asks_for_a_real_server_fails_at_collection(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(TESTS, encoding="utf-8")
    result = collect(tmp_path)
    assert result.returncode == 4, result.stdout + result.stderr  # pytest's usage error
    said = result.stdout + result.stderr
    assert (
        "test_sample.py::test_that_forgot_its_mark asks for the fixture 'engine_node', which "
        "starts a search engine: mark it @pytest.mark.integration"
    ) in said
    assert said.count("asks for the fixture") == 1  # not the marked test, nor the one without


def test_marked_tests_and_tests_without_servers_are_collected(tmp_path: Path) -> None:
    marked = TESTS.replace("def test_that_forgot_its_mark", "@pytest.mark.integration\ndef test_x")
    (tmp_path / "test_sample.py").write_text(marked, encoding="utf-8")
    result = collect(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 tests collected" in result.stdout
