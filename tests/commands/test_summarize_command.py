"""`npuwatch summarize` on each host, then `npuwatch scan --summaries`, as an operator runs
them: the report of `npuwatch scan` of the gathered logs, and a clear line for every summary
that cannot be merged."""

from __future__ import annotations

import json
from pathlib import Path

from npuwatch.scan.hosts import collection_hosts
from tests.conftest import FIXTURES
from tests.npuwatch_command import clean_environment, run_npuwatch

COLLECTION = FIXTURES / "collective" / "socket-chain"
UTC = ("--timezone", "UTC")


def summarize(host: str, output: Path, *extra: str) -> None:
    done = run_npuwatch(
        "summarize", str(COLLECTION / host), "--host", host, *UTC, "-o", str(output), *extra
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


def summaries(folder: Path, *extra: str) -> list[str]:
    hosts = collection_hosts(COLLECTION)
    assert hosts is not None and len(hosts) == 3
    for host in hosts:
        summarize(host, folder / f"{host}.json", *extra)
    return hosts


def test_the_summaries_of_every_host_give_the_report_of_the_gathered_logs(tmp_path: Path) -> None:
    summaries(tmp_path)
    for form in ((), ("--json",)):
        central = run_npuwatch("scan", "--summaries", str(tmp_path), *UTC, *form)
        whole = run_npuwatch("scan", str(COLLECTION), *UTC, *form)
        assert whole.returncode == central.returncode == 1  # error records: findings
        if form:
            assert json.loads(central.stdout) == json.loads(whole.stdout)
        else:
            assert central.stdout == whole.stdout
            assert "Incident 1: link server exited" in central.stdout


def test_scan_jobs_gives_the_report_of_one_process() -> None:
    one = run_npuwatch("scan", str(COLLECTION), *UTC, "--json", "--jobs", "1")
    two = run_npuwatch("scan", str(COLLECTION), *UTC, "--json", "--jobs", "2")
    assert one.returncode == two.returncode == 1
    assert json.loads(one.stdout)["files"] == 24
    assert one.stdout == two.stdout


def test_a_summary_written_to_standard_output_is_the_one_written_to_a_file(
    tmp_path: Path,
) -> None:
    summarize("host-a", tmp_path / "a.json")
    printed = run_npuwatch("summarize", str(COLLECTION / "host-a"), "--host", "host-a", *UTC)
    assert printed.returncode == 0, printed.stderr
    written = json.loads((tmp_path / "a.json").read_text())
    assert json.loads(printed.stdout) == written
    assert written["format"] == "npuwatch-host-summary" and written["version"] == 1
    assert written["host"] == "host-a" and written["scan"]["files"] == 8


def test_a_summary_is_never_written_through_a_link(tmp_path: Path) -> None:
    target = tmp_path / "not-yours"
    target.write_text("keep\n")
    (tmp_path / "a.json").symlink_to(target)
    summarize("host-a", tmp_path / "a.json")
    assert target.read_text() == "keep\n"
    assert not (tmp_path / "a.json").is_symlink()


def refusal(*args: str) -> str:
    done = run_npuwatch("scan", *args, *UTC)
    assert done.returncode == 2, done.stdout
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_summaries_that_cannot_be_merged_are_refused_in_one_line(tmp_path: Path) -> None:
    summaries(tmp_path)
    first = tmp_path / "host-a.json"

    other = tmp_path / "other"
    other.mkdir()
    data = json.loads(first.read_text())
    data["version"] = 2
    data["written_by"] = "9.0.0"
    (other / "new.json").write_text(json.dumps(data))
    assert "format version 2 (written by npuwatch 9.0.0)" in refusal("--summaries", str(other))

    (other / "new.json").write_text('{"hits": []}')
    assert "is not a host summary" in refusal("--summaries", str(other / "new.json"))

    (other / "new.json").write_text(first.read_text()[:-200])
    assert "not JSON" in refusal("--summaries", str(other / "new.json"))

    data = json.loads(first.read_text())
    del data["scan"]
    (other / "new.json").write_text(json.dumps(data))
    assert "damaged host summary" in refusal("--summaries", str(other / "new.json"))

    again = tmp_path / "again.json"
    again.write_text(first.read_text())
    assert "both summarise host host-a" in refusal("--summaries", str(tmp_path))
    again.unlink()

    summarize("host-b", tmp_path / "host-b.json", "--no-rules")
    assert "some summaries were made with the rules" in refusal("--summaries", str(tmp_path))

    empty = tmp_path / "empty"
    empty.mkdir()
    assert "holds no host summary" in refusal("--summaries", str(empty))
    assert "not both" in refusal(str(COLLECTION), "--summaries", str(tmp_path))
    done = run_npuwatch("scan", str(COLLECTION), "--jobs", "0")
    assert done.returncode == 2
    assert "argument --jobs: expected a whole number from 1" in done.stderr


def test_summarize_of_a_tree_that_does_not_exist_says_so(tmp_path: Path) -> None:
    done = run_npuwatch(
        "summarize",
        str(tmp_path / "nothing"),
        "-o",
        str(tmp_path / "s.json"),
        env=clean_environment(),
    )
    assert done.returncode == 2
    assert "does not exist" in done.stderr
    assert not (tmp_path / "s.json").exists()
