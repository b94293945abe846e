"""The fuzz suite's own settings: a failing example may be large (a condition nested 3,000
deep, a table of hundreds of rows), and Hypothesis warning that its repr is large must not
replace the failure it describes (the suite turns warnings into errors)."""

from __future__ import annotations

import pytest

LARGE_REPR = "ignore:Generating overly large repr:hypothesis.errors.HypothesisWarning"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.parent.name == "fuzz":
            item.add_marker(pytest.mark.filterwarnings(LARGE_REPR))
