"""`npuwatch incident show|list` against a real node, on an incident whose host names and evidence
lines carry terminal control sequences (a host folder named so, a log line written so): shown
as escapes, never acted on; `--json` gives the stored document exactly."""

from __future__ import annotations

import json
import re
import shutil
import time
from datetime import timezone
from pathlib import Path

import pytest

from npuwatch.cluster.incident_document import incident_document, incident_id, verdict
from npuwatch.cluster.service import INCIDENTS_STREAM
from npuwatch.parsers.timestamps import LocalClock
from npuwatch.scan.tree import scan_tree
from npuwatch.sinks.search.engine import Connection
from npuwatch.sinks.search.engines import connect
from npuwatch.sinks.search.streams import state_index
from tests.conftest import REPO
from tests.npuwatch_command import run_npuwatch
from tests.opensearch_node.launcher import RunningNode

pytestmark = pytest.mark.integration

NAMESPACE = "terminal"
HOSTILE = "\x1b[2J\x1b]52;c;ZWNobyBwd25lZA==\x07\x9b31m\u202e"
SHOWN = "\\x1b[2J\\x1b]52;c;ZWNobyBwd25lZA==\\a\\x9b31m\\u202e"
ACTED_ON = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def test_an_incident_from_hostile_logs_is_shown_escaped_and_its_json_is_exact(
    node: RunningNode, tmp_path: Path
) -> None:
    collection = tmp_path / "collection"
    shutil.copytree(REPO / "fixtures" / "collective" / "first-error-not-timeout", collection)
    (collection / "host-b").rename(collection / f"host-b{HOSTILE}")
    (incident,) = scan_tree(collection, LocalClock(timezone.utc)).incidents
    id_ = incident_id(incident.communicator, incident.first_us)
    document = incident_document(id_, verdict(incident, False), None, int(time.time() * 1e6), None)
    index = state_index(INCIDENTS_STREAM, NAMESPACE)
    engine = connect(Connection("opensearch", (node.url,)))
    try:
        engine.client.index(index=index, id=id_, body=document, refresh=True)
    finally:
        engine.close()
    config = tmp_path / "npuwatch.toml"
    config.write_text(
        f'[sinks.elasticsearch]\nflavour = "opensearch"\nhosts = ["{node.url}"]\n'
        f'namespace = "{NAMESPACE}"\n',
        "utf-8",
    )
    common = ("--config", str(config), "--timezone", "UTC")

    shown = run_npuwatch("incident", "show", id_, *common)
    listed = run_npuwatch("incident", "list", "--since", "1000d", *common)
    stored = run_npuwatch("incident", "show", id_, "--json", *common)

    assert (shown.returncode, listed.returncode, stored.returncode) == (0, 0, 0), shown.stderr
    for text in (shown.stdout, listed.stdout):
        assert ACTED_ON.search(text) is None
        assert f"host-b{SHOWN}" in text
    assert json.loads(stored.stdout) == document["ascend"]["incident"]
