"""Device readings and profiling operators shipped to the real OpenSearch node: each entry once,
in its data stream, with numbers mapped as numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from npuwatch.parsers.npu_smi import parse_npu_smi
from npuwatch.parsers.telemetry import DEVICE_KIND, PROFILING_KIND
from npuwatch.profiling.msprof.operators import operator_table
from npuwatch.profiling.msprof.run import load_profiles
from npuwatch.sinks.search.documents import levels_below
from npuwatch.sinks.search.engine import SearchEngine
from tests.agent.telemetry_agent import PROFILING_RUNS, SAMPLE, journal_telemetry
from tests.npu_smi_samples import load_doc_samples
from tests.sinks.search.conftest import install_template, make_shipper, ship_all

pytestmark = pytest.mark.integration

DEVICE_STREAM = "logs-ascend.device-default"
PROFILING_STREAM = "logs-ascend.profiling-default"


def test_telemetry_entries_land_once_in_their_streams_with_numeric_mappings(
    engine: SearchEngine, tmp_path: Path
) -> None:
    journaled = journal_telemetry(tmp_path / "agent")
    install_template(engine)
    # Even a sink that ships only ERROR records ships every reading and operator (they are
    # INFO, or WARNING for a chip in trouble, but not log lines a min_level is meant for).
    shipper, _, dead = make_shipper(
        engine, journaled.directory, tmp_path / "ship", skipped_levels=levels_below("ERROR")
    )
    ship_all(shipper)
    engine.client.indices.refresh(index="logs-ascend.*")
    assert dead.lines() == []
    assert engine.count(DEVICE_STREAM) == journaled.entries[DEVICE_KIND]
    assert engine.count(PROFILING_STREAM) == journaled.entries[PROFILING_KIND]

    # Sent again from the start: every entry is a 409, nothing is added.
    again, _, _ = make_shipper(engine, journaled.directory, tmp_path / "again")
    ship_all(again)
    engine.client.indices.refresh(index="logs-ascend.*")
    assert engine.count(DEVICE_STREAM) == journaled.entries[DEVICE_KIND]
    assert engine.count(PROFILING_STREAM) == journaled.entries[PROFILING_KIND]

    # Numbers are numbers: a range over HBM use and over operator time.
    chips = parse_npu_smi(load_doc_samples()[SAMPLE]).chips
    busy = [c for c in chips if c.hbm_used_bytes and c.hbm_used_bytes > 16 << 30]
    polls = journaled.entries[DEVICE_KIND] // len(chips)
    over_16_gib = {"range": {"ascend.npu.hbm.used_bytes": {"gt": 16 << 30}}}
    assert engine.count(DEVICE_STREAM, over_16_gib) == polls * len(busy)
    warned = {"term": {"ascend.npu.health": "Warning"}}
    assert engine.count(DEVICE_STREAM, warned) == polls * sum(c.health == "Warning" for c in chips)

    tables = [operator_table(run) for run in load_profiles(PROFILING_RUNS)]
    slow = sum(int((table["total_us"] > 1000).sum()) for table in tables)
    over_a_ms = {"range": {"ascend.profiling.total_us": {"gt": 1000}}}
    assert engine.count(PROFILING_STREAM, over_a_ms) == slow > 0
    matmul = {"term": {"ascend.profiling.type": "MatMulV2"}}
    assert engine.count(PROFILING_STREAM, matmul) == sum(
        int((table["op_type"] == "MatMulV2").sum()) for table in tables
    )
    mapping = engine.client.indices.get_mapping(index=PROFILING_STREAM)
    (index,) = mapping.values()
    profiling = index["mappings"]["properties"]["ascend"]["properties"]["profiling"]["properties"]
    assert profiling["total_us"]["type"] == "double"
    assert profiling["count"]["type"] == "long"
