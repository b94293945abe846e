"""Live equals offline: real agents' journals, read by `npuwatch correlate --journal`, and what
they shipped to a real OpenSearch node, read by `npuwatch correlate --once`, give the incidents
`npuwatch scan` gives for the same collection.

Why: the agent's collective watch and scan are two paths from the same lines to the same
root-cause engine (records batch by batch in one, a whole tree in the other). Whatever the
one extracts and the other does not shows up here as another kind, code, communicator,
confidence, root cause, waiting chain or victim, for every fixture collection and every real
case.

Each collection (every folder of fixtures/collective, of fixtures/init-link when it is there,
and of ../shared/real-logs/hccl when it is there) is split into hosts by scan's own rule; one
`npuwatch agent` process a host follows a copy of its folder until it journaled every file to
its end, written while it runs (each file's first half of records first, the rest in parts),
then is stopped (live_offline.py); `correlate --journal` reads their state folders, and
`correlate --once` what they shipped (a namespace of the node a collection).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from npuwatch.sinks.search.engine import Connection
from npuwatch.sinks.search.engines import connect
from tests.cluster.live_offline import (
    Shipping,
    StartsAhead,
    differences,
    in_order,
    split_hosts,
)
from tests.conftest import FIXTURES, REAL_LOGS
from tests.opensearch_node.launcher import RunningNode
from tests.sinks.search.conftest import forget_namespace, install_template

pytestmark = pytest.mark.integration

REAL_CASES = REAL_LOGS / "hccl"
SOURCES = (FIXTURES / "collective", FIXTURES / "init-link")

NOT_EQUAL_YET: dict[str, str] = {}
"""Collection → how its live incidents differ from scan's (a finding for the engine). Such a
collection must fail (strict xfail): one that starts passing is taken out of this dict."""


def param(name: str, path: Path, *marks: pytest.MarkDecorator) -> Any:
    split = split_hosts(path)
    if isinstance(split, str):
        marks = (*marks, pytest.mark.skip(reason=split))
    elif name in NOT_EQUAL_YET:
        # only the comparison may fail: agents that did not run as they should fail the test
        reason = NOT_EQUAL_YET[name]
        marks = (*marks, pytest.mark.xfail(strict=True, raises=AssertionError, reason=reason))
    return pytest.param(path, id=name, marks=marks)


def folders(parent: Path) -> list[Path]:
    return sorted(path for path in parent.iterdir() if path.is_dir()) if parent.is_dir() else []


def collections() -> list[Any]:
    """Every fixture collection, then every real case (or one skip saying they are absent)."""
    params = [param(f"{p.name}/{path.name}", path) for p in SOURCES for path in folders(p)]
    if not REAL_CASES.is_dir():
        absent = "../shared/real-logs/hccl is not present on this machine"
        return [*params, pytest.param(None, id="hccl", marks=pytest.mark.skip(reason=absent))]
    real = pytest.mark.realdata
    return params + [param(f"hccl/{path.name}", path, real) for path in folders(REAL_CASES)]


@pytest.fixture(scope="module")
def runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, node: RunningNode
) -> Iterator[StartsAhead]:
    """The collections of the tests selected, in the order they run, the next one started ahead."""
    roots = []
    for item in request.session.items:
        if (
            isinstance(item, pytest.Function)
            and item.function is test_the_agents_journals_give_the_incidents_scan_gives
            and item.get_closest_marker("skip") is None
            and isinstance(root := item.callspec.params["root"], Path)
        ):
            roots.append(root)
    engine = connect(Connection("opensearch", (node.url,)))
    namespaces: dict[Path, str] = {}
    made = iter(range(1 << 30))

    def shipping(root: Path) -> Shipping:
        # The collections before the one under way are done: their indices go.
        for done in list(namespaces)[:-1]:
            forget_namespace(engine, namespaces.pop(done))
        namespace = namespaces[root] = f"leq{next(made)}"
        install_template(engine, namespace)
        return Shipping(node.url, namespace)

    ahead = StartsAhead(roots, lambda: tmp_path_factory.mktemp("collection"), shipping=shipping)
    yield ahead
    ahead.close()
    for namespace in namespaces.values():
        forget_namespace(engine, namespace)
    engine.close()


@pytest.mark.parametrize("root", collections())
def test_the_agents_journals_give_the_incidents_scan_gives(root: Path, runs: StartsAhead) -> None:
    outcome = runs.outcome(root)
    if outcome.wrong:  # not a difference: the agents did not run as they should
        pytest.fail("\n".join(outcome.wrong))

    assert differences(outcome.live, outcome.offline) == []
    assert outcome.engine is not None
    assert differences(outcome.engine, outcome.offline) == []
    # The service that read it all as it was shipped, and `--once` beside it: one incident per
    # fault (the others merged into it), no early verdict left open.
    assert outcome.stored is not None
    assert differences(in_order(outcome.stored), in_order(outcome.offline)) == []
