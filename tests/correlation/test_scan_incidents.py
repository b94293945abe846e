"""`npuwatch scan` and its incidents: the JSON contract, and collections that are wrong."""

from __future__ import annotations

import json
from pathlib import Path

from npuwatch.scan.tree import scan_tree
from tests.conftest import TREES, utc_clock
from tests.npuwatch_command import clean_environment, run_npuwatch

PLACE_KEYS = {
    "host",
    "device",
    "logic_device",
    "rank",
    "communicator",
    "pid",
    "address",
    "has_logs",
}
INCIDENT_KEYS = {
    "kind", "faultdiag_code", "summary", "communicator", "root_cause", "waiting_chain",
    "victims", "unheard", "evidence", "confidence",
}  # fmt: skip


def scan_json(root: Path) -> dict[str, object]:
    result = run_npuwatch("scan", str(root), "--json", env=clean_environment(TZ="UTC"))
    assert result.returncode in (0, 1), result.stderr
    document: dict[str, object] = json.loads(result.stdout)
    return document


def test_a_single_host_tree_without_collective_failures_has_no_incidents() -> None:
    assert scan_json(TREES / "out-of-memory")["incidents"] == []


def test_each_incident_and_place_has_the_fields_of_the_contract() -> None:
    incidents = scan_json(TREES / "hccl-timeout")["incidents"]
    assert isinstance(incidents, list) and len(incidents) == 1
    (incident,) = incidents
    assert set(incident) >= INCIDENT_KEYS
    for name in ("root_cause", "waiting_chain", "victims", "unheard"):
        for place in incident[name]:
            assert set(place) == PLACE_KEYS
    for line in incident["evidence"]:
        assert set(line) == {"file", "line", "text"}
        assert Path(line["file"]).is_file() and line["line"] >= 1
    assert 0 < incident["confidence"] < 1


def _plog(root: Path, host: str, pid: int, lines: list[str]) -> None:
    path = root / host / "ascend" / "log" / "debug" / "plog" / f"plog-{pid}_20251210195327204.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "\n".join(
        f"[{level}] HCCL({pid},python3):2025-12-10-{time} [x.cc:1] [{tid}]{text}"
        for level, time, tid, text in (line.split("|", 3) for line in lines)
    )
    path.write_text(body + "\n", encoding="utf-8")


def _member(rank: int, count: int = 4, ip: str | None = None) -> list[str]:
    return [
        f"INFO|19:53:28.100.000|1|[Communicator Key Info]identifier[world] rankSize[{count}] serverNum[1]",
        f"INFO|19:53:28.100.100|1|[LocalRank Key Info]userRank[{rank}] hostIp[10.0.0.11] "
        f"devicePhyId[{rank}] server[10.0.0.11] deviceIp[{ip or f'192.168.1.{rank}'}] superPodId[0]",
    ]


BASE = "[TaskExecStage][Timeout][HOST_TS]Task run failed, base information is streamID:[3], taskID[8], taskType[Notify Wait], tag[AllReduce_world], AlgType(level 0-1-2):[x-y-z]."
PARA = "[TaskExecStage][Timeout][HOST_TS]Task run failed, para information is notify id:[0x1], stage:[0], remote rank:[{remote}], tag[AllReduce_world]."


def test_wrong_and_cut_lines_never_stop_the_scan_and_are_named_in_the_incident(
    tmp_path: Path,
) -> None:
    root = tmp_path / "job"
    # rank 0 and 1 wait on rank 3 (silent); rank 1's block is interleaved with another thread's
    _plog(
        root,
        "host-a",
        100,
        [
            *_member(0),
            f"ERROR|20:10:00.000.000|7|{BASE}",
            f"ERROR|20:10:00.000.100|7|{PARA.format(remote=3)}",
        ],
    )
    _plog(root, "host-a", 101, [
        *_member(1), f"ERROR|20:10:00.100.000|8|{BASE}", f"ERROR|20:10:00.100.050|9|{BASE}",
        f"ERROR|20:10:00.100.100|8|{PARA.format(remote=3)}", f"ERROR|20:10:00.100.150|9|{PARA.format(remote=99)}",
    ])  # fmt: skip
    # rank 2 claims rank 0's device IP, and its block is cut after the first line
    _plog(root, "host-a", 102, [*_member(2, ip="192.168.1.0"), f"ERROR|20:10:00.200.000|7|{BASE}"])
    _plog(
        root,
        "host-a",
        103,
        [*_member(3), "INFO|20:00:00.000.000|1|[LocalRank Key Info]userRank[-4] devicePhyId[-1]"],
    )
    # garbage HCCL lines of every shape
    _plog(
        root,
        "host-a",
        104,
        [
            "ERROR|20:10:01.000.000|1|remote rank:[",
            "ERROR|20:10:01.000.000|1|cqe error status[",
            "ERROR|20:10:01.000.000|1|Cluster Exception Location[IP/ID]:[/",
        ],
    )
    result = scan_tree(root, utc_clock())
    assert result.problems == []
    (incident,) = result.incidents
    assert [(p.host, p.rank) for p in incident.root_cause] == [("host-a", 3)]
    notes = "\n".join(incident.notes)
    assert "device IP 192.168.1.0 claimed by" in notes
    assert "rank 99 of a 4-rank communicator" in notes
    assert "ends after its first line" in notes
    assert "-1 is negative" in notes or "-4 is negative" in notes
    assert incident.confidence < 0.6  # 0.85 for the same verdict on clean lines
