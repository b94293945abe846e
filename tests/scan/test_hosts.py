"""`scan` of a collection: one folder per host, whose name is the host of its records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from npuwatch.cli import main
from npuwatch.scan.aggregate import ScanResult
from npuwatch.scan.hosts import collection_base, collection_hosts, host_of
from npuwatch.scan.text import render_scan
from npuwatch.scan.tree import scan_tree
from npuwatch.terminal import Palette
from tests.conftest import TREES, utc_clock


def plog(folder: Path, pid: int, message: str = "F:x") -> Path:
    """A plog file of process `pid` under `folder` with one ERROR line."""
    path = folder / "debug" / "plog" / f"plog-{pid}_20250101000000000.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"[ERROR] GE({pid},python3):2025-01-01-00:00:00.000.000 [a.cc:1]{pid} {message}\n"
    )
    return path


def scan(root: Path, host: str | None = None) -> ScanResult:
    return scan_tree(root, utc_clock(), host=host)


def hosts_of_processes(result: ScanResult) -> set[tuple[str | None, int | None]]:
    return {(process.host, process.pid) for process in result.processes.values()}


def test_a_folder_of_host_folders_is_a_collection_named_by_its_folders(tmp_path: Path) -> None:
    plog(tmp_path / "host-a" / "ascend" / "log", 10)
    plog(tmp_path / "host-b" / "ascend" / "log", 20)
    result = scan(tmp_path)
    assert result.collection and result.hosts == ["host-a", "host-b"]
    assert hosts_of_processes(result) == {("host-a", 10), ("host-b", 20)}


def test_a_log_tree_with_cann_folders_is_one_unnamed_host(tmp_path: Path) -> None:
    plog(tmp_path, 10)
    (tmp_path / "run" / "device-0").mkdir(parents=True)
    (tmp_path / "job").mkdir()  # one folder of CANN's is enough, whatever sits beside it
    result = scan(tmp_path)
    assert not result.collection and result.hosts == []
    assert hosts_of_processes(result) == {(None, 10)}


def test_faultdiag_worker_folders_are_hosts_in_natural_order(tmp_path: Path) -> None:
    for worker in (0, 1, 10, 2):
        plog(tmp_path / f"worker-{worker}" / "process_log", 100 + worker)
    result = scan(tmp_path)
    assert result.hosts == ["worker-0", "worker-1", "worker-2", "worker-10"]
    assert ("worker-10", 110) in hosts_of_processes(result)


def test_one_nodes_faultdiag_collection_directory_is_a_single_tree(tmp_path: Path) -> None:
    for folder in ("process_log", "device_log", "dl_log", "environment_check"):
        (tmp_path / folder).mkdir()
    assert collection_hosts(tmp_path) is None


@pytest.mark.parametrize(
    "folder",
    [
        "mindstudio_sanitizer_log",
        "monitor_output",
        "info_20260415111938",
        "OPPROF_20250302093000_MEMBOUNDVECTORAB",
    ],
)
def test_a_debugging_tools_output_folder_makes_a_single_tree(tmp_path: Path, folder: str) -> None:
    (tmp_path / folder).mkdir()
    (tmp_path / "job").mkdir()
    assert collection_hosts(tmp_path) is None
    (tmp_path / folder).rename(tmp_path / "worker-1")  # the same tree without it: two hosts
    assert collection_hosts(tmp_path) == ["job", "worker-1"]


def test_the_old_slog_host_folder_is_cann_s_own_but_a_host_named_host_0_is_not(
    tmp_path: Path,
) -> None:
    old = tmp_path / "slog-root"
    (old / "host-0").mkdir(parents=True)
    (old / "host-0" / "host-0_20200101000000.log").write_text("x\n")
    assert collection_hosts(old) is None
    gathered = tmp_path / "job"
    plog(gathered / "host-0" / "ascend" / "log", 1)
    plog(gathered / "host-1" / "ascend" / "log", 1)
    assert collection_hosts(gathered) == ["host-0", "host-1"]


def test_files_directly_in_a_collections_root_belong_to_no_host(tmp_path: Path) -> None:
    plog(tmp_path / "host-a", 10)
    (tmp_path / "rank-0.log").write_text(
        "[ERROR] RUNTIME(30,python3):2025-01-01-00:00:00.000.000 [a.cc:1]30 F:y\n"
    )
    result = scan(tmp_path)
    assert result.hosts == ["host-a"]
    assert hosts_of_processes(result) == {("host-a", 10), (None, 30)}


def test_host_names_the_host_of_a_single_tree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plog(tmp_path, 10)
    assert main(["scan", str(tmp_path), "--host", "node-7", "--json", "--no-rules"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["hosts"] == ["node-7"]
    assert [(p["host"], p["pid"]) for p in report["processes"]] == [("node-7", 10)]
    assert report["first_errors"][0]["host"] == "node-7"


def test_host_is_refused_on_a_collection_with_one_line_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plog(tmp_path / "host-a", 10)
    assert main(["scan", str(tmp_path), "--host", "node-7", "--no-rules"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("npuwatch: ") and "folder names are the host names" in line


def test_the_same_pid_on_two_hosts_is_two_processes(tmp_path: Path) -> None:
    plog(tmp_path / "host-a", 4242, "E30009 on a")
    plog(tmp_path / "host-b", 4242, "E30009 on b")
    result = scan(tmp_path)
    assert hosts_of_processes(result) == {("host-a", 4242), ("host-b", 4242)}
    assert [(e.host, e.pid) for e in result.first_errors] == [("host-a", 4242), ("host-b", 4242)]
    assert set(result.codes["E30009"].processes) == {("host-a", 4242), ("host-b", 4242)}


def test_the_hccl_timeout_fixture_has_hosts_a_and_b_with_four_ranks_each() -> None:
    result = scan(TREES / "hccl-timeout")
    assert result.hosts == ["host-a", "host-b"]
    ranks = {(p.host, p.pid) for p in result.processes.values() if p.name == "python3"}
    assert ranks == {("host-a", pid) for pid in range(3300, 3304)} | {
        ("host-b", pid) for pid in range(3304, 3308)
    }


def test_the_json_names_the_host_of_every_process_code_and_first_error() -> None:
    report = scan(TREES / "hccl-timeout").to_dict()
    assert report["hosts"] == ["host-a", "host-b"]
    assert {p["host"] for p in report["processes"]} == {"host-a", "host-b"}
    (code,) = report["error_codes"]
    assert {(p["host"], p["pid"]) for p in code["processes"]} == {
        ("host-a", 3300),
        ("host-a", 3301),
        ("host-a", 3302),
        ("host-a", 3303),
        ("host-b", 3304),
        ("host-b", 3305),
        ("host-b", 3307),
    }
    assert all(error["host"] in ("host-a", "host-b") for error in report["first_errors"])


def test_the_report_of_a_collection_names_the_host_beside_each_pid() -> None:
    text = render_scan(scan(TREES / "hccl-timeout"), utc_clock().zone, Palette(False))
    lines = text.splitlines()
    assert "  2 hosts: host-a, host-b" in lines
    assert any(
        line.startswith("── ") and "host-b, pid 7790 (hccp_service.bin)" in line for line in lines
    )
    assert any(
        "host-a 3300(python3)" in line and "; host-b 3304(python3)" in line for line in lines
    )
    assert any(line.split()[:2] == ["host-b", "3306"] for line in lines)


def test_the_report_of_a_single_tree_names_no_host_even_when_given_one(tmp_path: Path) -> None:
    plog(tmp_path, 10)
    zone = utc_clock().zone
    named = render_scan(scan(tmp_path, host="node-7"), zone, Palette(False))
    assert named == render_scan(scan(tmp_path), zone, Palette(False))
    assert "HOST" not in named and "node-7" not in named


def test_wrapper_folders_are_looked_through_to_the_folders_that_are_the_hosts(
    tmp_path: Path,
) -> None:
    """`case/0318/1/log1/…` and `case/0318/2/log1/…`: two hosts, 1 and 2, not one host 0318."""
    for host in ("1", "2"):
        (tmp_path / "0318" / host / "log1" / "debug" / "plog").mkdir(parents=True)
    assert collection_base(tmp_path) == tmp_path / "0318"
    assert collection_hosts(tmp_path) == ["1", "2"]
    plog = tmp_path / "0318" / "2" / "log1" / "debug" / "plog" / "plog-1_1.log"
    assert host_of(collection_base(tmp_path), plog, {"1", "2"}) == "2"


def test_one_hosts_tree_under_a_wrapper_folder_stays_one_host(tmp_path: Path) -> None:
    (tmp_path / "job42" / "ascend" / "log").mkdir(parents=True)
    assert collection_hosts(tmp_path) == ["job42"]  # job42 holds CANN's own folder
    assert collection_base(tmp_path) == tmp_path
