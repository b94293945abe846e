"""Fixtures that start a real server (OpenSearch on Java, Prometheus, Alertmanager), and the
check that every test asking for one is marked `integration`.

`python -m pytest -m "not integration"` is the contributor's loop: it must run in minutes on a
machine without Java, Prometheus or systemd. A test that asks for a real server without the mark
would break that loop (or silently start a Java node); the check turns it into an error at
collection, naming the test and the fixture.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import pytest

Function = TypeVar("Function", bound=Callable[..., object])

REAL_SERVER_FIXTURES: dict[str, str] = {}
"""The name of each real-server fixture, and what it starts."""


def real_server(what: str) -> Callable[[Function], Function]:
    """Declare the fixture below as one that starts `what` (put it under @pytest.fixture)."""

    def declare(fixture: Function) -> Function:
        name = fixture.__name__
        assert name not in REAL_SERVER_FIXTURES, f"two real-server fixtures are named {name}"
        REAL_SERVER_FIXTURES[name] = what
        return fixture

    return declare


def unmarked_real_server_tests(items: Sequence[pytest.Item]) -> list[str]:
    """One line for each test that asks for a real server without the integration mark."""
    problems = []
    for item in items:
        if item.get_closest_marker("integration") is not None:
            continue
        wanted = sorted(set(getattr(item, "fixturenames", ())) & REAL_SERVER_FIXTURES.keys())
        for name in wanted:
            problems.append(
                f"{item.nodeid} asks for the fixture {name!r}, which starts "
                f"{REAL_SERVER_FIXTURES[name]}: mark it @pytest.mark.integration"
            )
    return problems
