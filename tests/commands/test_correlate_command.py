"""`npuwatch correlate` without a search engine: `--journal` over the journals real agents wrote
gives the incidents `scan` gives for the same logs; `--check` says what the service would use,
and what stops it in one line; bad journals are exit 2 with one line."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from npuwatch.journal.store import segment_path
from tests.cluster.fixture_hosts import COLLECTION, HOSTS, journal_hosts
from tests.journal.damaged_journal import (
    DAMAGES,
    Damage,
    damage_segment,
    page_overwritten,
    write_journal,
)
from tests.npuwatch_command import run_npuwatch


@pytest.fixture(scope="module")
def states(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    yield journal_hosts(tmp_path_factory.mktemp("journals"))


def decided(incident: dict[str, Any]) -> dict[str, Any]:
    """What an incident decides, without where its evidence lines were read."""
    keep = ("kind", "faultdiag_code", "summary", "communicator", "first", "recovered")
    places = ("root_cause", "waiting_chain", "victims", "unheard")
    found = {key: incident[key] for key in keep}
    for key in places:
        found[key] = [{k: v for k, v in p.items() if k != "pid"} for p in incident[key]]
    return found


def scan_incidents() -> list[dict[str, Any]]:
    done = run_npuwatch("scan", str(COLLECTION), "--json", "--no-rules")
    assert done.returncode == 1, done.stderr
    return list(json.loads(done.stdout)["incidents"])


def test_the_journals_of_every_host_give_the_incidents_scan_gives(states: dict[str, Path]) -> None:
    done = run_npuwatch("correlate", "--journal", *(str(states[h]) for h in HOSTS), "--json")

    assert done.returncode == 1, done.stderr  # incidents found
    found = json.loads(done.stdout)["incidents"]
    expected = scan_incidents()
    assert [decided(i) for i in found] == [decided(i) for i in expected]
    (incident,) = found
    assert [(p["host"], p["rank"]) for p in incident["root_cause"]] == [("host-b", 5)]
    assert len(incident["victims"]) == 7


def test_the_journals_read_on_one_process_or_two_give_the_same_report(
    states: dict[str, Path],
) -> None:
    journals = [str(states[h]) for h in HOSTS]
    one = run_npuwatch("correlate", "--journal", *journals, "--json", "--jobs", "1")
    two = run_npuwatch("correlate", "--journal", *journals, "--json", "--jobs", "2")
    assert one.returncode == two.returncode == 1, one.stderr + two.stderr
    assert len(json.loads(one.stdout)["incidents"]) == 1
    assert one.stdout == two.stdout


def test_the_report_is_scan_s_and_a_journal_folder_is_taken_as_well(
    states: dict[str, Path],
) -> None:
    done = run_npuwatch(
        "correlate", "--journal", *(str(states[h] / "journal") for h in HOSTS), "--timezone", "UTC"
    )

    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("Incident 1: first error not timeout at 2025-12-10 ")
    assert "  root cause  host-b dev 1 (rank 5) in 10.0.0.11%eth0_60000_0_1765367607599032" in lines
    assert "  victims     7: host-a 4, host-b 3" in lines


def test_one_host_s_journal_alone_names_no_waiting_rank_of_the_other(
    states: dict[str, Path],
) -> None:
    done = run_npuwatch("correlate", "--journal", str(states["host-a"]), "--json")

    assert done.returncode == 1, done.stderr
    (incident,) = json.loads(done.stdout)["incidents"]
    assert {p["host"] for p in incident["victims"]} == {"host-a"}


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda tmp: tmp / "missing", "no such folder: give an agent's state directory"),
        (lambda tmp: tmp, "no journal here (no segment-*.db in it or in"),
    ],
)
def test_a_folder_without_a_journal_is_one_line_and_exit_2(
    tmp_path: Path, make: Any, said: str
) -> None:
    done = run_npuwatch("correlate", "--journal", str(make(tmp_path)))

    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert said in line


# --- a journal with a damaged segment ----------------------------------------------------------


def one_journal(folder: Path, first: Path, damaged: Damage, last: Path) -> Path:
    """A journal of three segments: `first`, a copy of `last` damaged, and `last` (the only
    segment of each journal given)."""
    folder.mkdir()
    for sequence, journal in ((1, first), (2, last), (3, last)):
        (segment,) = sorted(journal.glob("segment-*.db"))
        shutil.copy(segment, segment_path(folder, sequence))
    damage_segment(folder, 2, damaged)
    return folder


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_the_incidents_of_the_intact_segments_are_found_with_one_warning_for_the_damaged(
    states: dict[str, Path], tmp_path: Path, damage: str
) -> None:
    journals = [states[host] / "journal" for host in HOSTS]
    folder = one_journal(tmp_path / "journal", journals[0], DAMAGES[damage], journals[1])

    done = run_npuwatch("correlate", "--journal", str(folder), "--json")

    assert done.returncode == 1, done.stderr  # incidents found
    found = json.loads(done.stdout)["incidents"]
    assert [decided(i) for i in found] == [decided(i) for i in scan_incidents()]
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"npuwatch: WARNING journal segment {segment_path(folder, 2)} ")


@pytest.mark.parametrize(
    "damage",
    [DAMAGES["overwritten with garbage"], page_overwritten("events")],
    ids=lambda damage: damage.__name__,
)
def test_no_incident_in_the_intact_segments_exits_0_with_the_warning(
    tmp_path: Path, damage: Damage
) -> None:
    folder = tmp_path / "journal"
    write_journal(folder)  # records and events, no collective failure
    damaged = damage_segment(folder, 2, damage)

    done = run_npuwatch("correlate", "--journal", str(folder))

    assert (done.returncode, done.stdout) == (0, "No collective incident.\n")
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"npuwatch: WARNING journal segment {damaged} ")


def test_check_says_what_the_service_would_use(tmp_path: Path) -> None:
    config = tmp_path / "npuwatch.toml"
    config.write_text(
        '[sinks.elasticsearch]\nenabled = true\nflavour = "opensearch"\n'
        'hosts = ["https://os-1.example:9200"]\nnamespace = "prod"\n'
        '[correlate]\nlisten = "127.0.0.1:9917"\n',
        "utf-8",
    )

    done = run_npuwatch("correlate", "--check", "--config", str(config))

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "search engine: opensearch at https://os-1.example:9200",
        "reads: logs-ascend.topology-prod, logs-ascend.events-prod",
        "writes: logs-ascend.incidents-prod",
        "metrics: /metrics on 127.0.0.1:9917",
    ]


def test_check_refuses_a_secret_it_cannot_read_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "npuwatch.toml"
    missing = tmp_path / "es-api-key"
    config.write_text(
        f'[sinks.elasticsearch]\nenabled = true\nhosts = ["https://es.example:9200"]\n'
        f'api_key_file = "{missing}"\n',
        "utf-8",
    )

    done = run_npuwatch("correlate", "--check", "--config", str(config))

    assert done.returncode == 1  # a problem the check found (2: no file to check)
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1
    assert str(missing) in done.stderr


def test_the_agents_evidence_names_the_lines_scan_names(states: dict[str, Path]) -> None:
    """The agents read their files from the start: each evidence line has its line number, the
    one scan gives (the folders differ: the agents read copies)."""
    done = run_npuwatch("correlate", "--journal", *(str(states[h]) for h in HOSTS), "--json")
    (incident,) = json.loads(done.stdout)["incidents"]
    (expected,) = scan_incidents()

    def lines(found: dict[str, Any]) -> list[tuple[str, int | None, str]]:
        return sorted((Path(e["file"]).name, e["line"], e["text"]) for e in found["evidence"])

    assert lines(incident) == lines(expected)
    assert all(line is not None for _, line, _ in lines(incident))
