"""Which folders the agent follows: the configured roots, or where CANN writes its logs."""

from __future__ import annotations

from pathlib import Path

from npuwatch.cann_roots import DEVICE_LOG_ROOT, host_log_root
from npuwatch.collector.roots import discover_roots
from npuwatch.config.sections import SourcesSection


def homes(tmp_path: Path) -> dict[str, Path]:
    return {"root": tmp_path / "root", "hpc": tmp_path / "home" / "hpc"}


def test_configured_roots_are_returned_as_given_even_when_absent(tmp_path: Path) -> None:
    sources = SourcesSection(roots=[tmp_path / "absent", tmp_path, tmp_path / "absent"])
    found = discover_roots(sources, {"ASCEND_PROCESS_LOG_PATH": str(tmp_path)}, lambda user: None)
    assert found == [tmp_path / "absent", tmp_path]


def test_without_roots_the_cann_locations_that_exist_are_followed_in_order(tmp_path: Path) -> None:
    process_logs = tmp_path / "job" / "log"
    for folder in (process_logs, tmp_path / "root/ascend/log", tmp_path / "home/hpc/ascend/log"):
        folder.mkdir(parents=True)
    sources = SourcesSection(users=["root", "hpc"])
    found = discover_roots(
        sources, {"ASCEND_PROCESS_LOG_PATH": str(process_logs)}, homes(tmp_path).get
    )
    assert found == [process_logs, tmp_path / "root/ascend/log", tmp_path / "home/hpc/ascend/log"]


def test_locations_that_do_not_exist_are_left_out(tmp_path: Path) -> None:
    (tmp_path / "home/hpc/ascend/log").mkdir(parents=True)
    sources = SourcesSection(users=["root", "hpc"])
    found = discover_roots(
        sources, {"ASCEND_PROCESS_LOG_PATH": str(tmp_path / "absent")}, homes(tmp_path).get
    )
    assert found == [tmp_path / "home/hpc/ascend/log"]


def test_unknown_users_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "root/ascend/log").mkdir(parents=True)
    sources = SourcesSection(users=["nobody-here", "root"])
    assert discover_roots(sources, {}, homes(tmp_path).get) == [tmp_path / "root/ascend/log"]


def test_the_device_log_folder_comes_last_and_a_location_is_followed_once(tmp_path: Path) -> None:
    logs = tmp_path / "root/ascend/log"
    seen: list[Path] = []

    def exists(path: Path) -> bool:
        seen.append(path)
        return True

    found = discover_roots(
        SourcesSection(), {"ASCEND_PROCESS_LOG_PATH": f"{logs}/"}, homes(tmp_path).get, exists
    )
    assert found == [logs, DEVICE_LOG_ROOT]
    assert seen == [logs, DEVICE_LOG_ROOT]


def test_an_empty_process_log_variable_is_ignored(tmp_path: Path) -> None:
    found = discover_roots(
        SourcesSection(users=[]),
        {"ASCEND_PROCESS_LOG_PATH": ""},
        homes(tmp_path).get,
        lambda p: True,
    )
    assert found == [DEVICE_LOG_ROOT]


def test_without_roots_ascend_work_path_names_the_log_folder_as_for_scan(tmp_path: Path) -> None:
    logs = tmp_path / "work" / "log"
    logs.mkdir(parents=True)
    environ = {"ASCEND_WORK_PATH": str(tmp_path / "work")}
    found = discover_roots(SourcesSection(users=[]), environ, homes(tmp_path).get)
    assert found == [logs]
    assert host_log_root(environ, tmp_path / "root").path == logs  # what scan and doctor read


def test_ascend_process_log_path_wins_over_ascend_work_path(tmp_path: Path) -> None:
    (tmp_path / "process").mkdir()
    (tmp_path / "work" / "log").mkdir(parents=True)
    environ = {
        "ASCEND_PROCESS_LOG_PATH": str(tmp_path / "process"),
        "ASCEND_WORK_PATH": str(tmp_path / "work"),
    }
    assert discover_roots(SourcesSection(users=[]), environ) == [tmp_path / "process"]
