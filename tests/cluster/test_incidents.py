"""Incident documents: one per fault, found again however its verdict moves, revised with what
changed, provisional until the settle rule holds."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from npuwatch.cluster.incident_book import IncidentBook
from npuwatch.cluster.incident_document import (
    VICTIMS_LISTED,
    incident_document,
    incident_from_document,
    incident_id,
    verdict,
)
from npuwatch.correlation.incident import Incident, Place
from npuwatch.parsers.hccl.model import Evidence

MINUTE = 60_000_000
T0 = 1_757_842_531_000_000


def incident(
    first_us: int = T0,
    victims: int = 3,
    communicator: str | None = "world",
    root_host: str = "host-b",
    ranks_expected: int | None = 8,
) -> Incident:
    root = Place(host=root_host, device=2, rank=6, communicator=communicator, pid=3306)
    waiting = [
        Place(host=f"host-{n % 2}", device=n % 8, rank=n, communicator=communicator, pid=4000 + n)
        for n in range(victims)
    ]
    return Incident(
        kind="rdma_retransmission",
        summary="host-b dev 2 (rank 6) failed first",
        communicator=communicator,
        root_cause=[root],
        waiting_chain=[waiting[0], root] if waiting else [root],
        victims=waiting,
        unheard=[],
        evidence=[Evidence("plog-3306.log", 22, "[ERROR] HCCL …", first_us)],
        confidence=0.9,
        first_us=first_us,
        last_us=first_us + 2 * MINUTE,
        settle_us=first_us + 32 * MINUTE,
        ranks_expected=ranks_expected,
        ranks_reported=victims + 1,
    )


def stored(found: Incident, now_us: int = T0, id_: str = "id-1") -> dict:
    document = incident_document(id_, verdict(found, provisional=True), None, now_us, None)
    return {"_id": id_, "_seq_no": 0, "_primary_term": 1, "_source": document}


def test_a_verdict_is_provisional_until_its_timeout_and_grace_or_every_rank_reported() -> None:
    found = incident(victims=3)
    assert not found.settled(T0 + 31 * MINUTE)
    assert found.settled(T0 + 32 * MINUTE)
    assert incident(victims=7).settled(T0)  # 7 waiting and the root: all 8 ranks reported
    assert not incident(victims=7, ranks_expected=None).settled(T0)


def test_a_revision_says_what_changed_and_when() -> None:
    before = incident_document("id-1", verdict(incident(), True), None, T0, None)
    part = before["ascend"]["incident"]
    assert [r["changed"] for r in part["revisions"]] == [["verdict"]]
    later = incident_document("id-1", verdict(incident(victims=7), False), part, T0 + MINUTE, None)
    revised = later["ascend"]["incident"]
    assert revised["revisions"][-1]["changed"] == [
        "victims_count",
        "provisional",
    ]
    assert revised["first_verdict"] == part["first_verdict"]
    assert revised["updated"] != part["updated"]
    same = incident_document(
        "id-1", verdict(incident(victims=7), False), revised, T0 + 2 * MINUTE, None
    )
    assert same["ascend"]["incident"]["revisions"] == revised["revisions"]  # nothing new said


def test_a_job_s_thousands_of_victims_are_counted_by_host_and_only_the_first_listed() -> None:
    found = verdict(incident(victims=VICTIMS_LISTED + 100), provisional=False)
    assert found["victims_count"] == VICTIMS_LISTED + 100
    assert len(found["victims"]) == VICTIMS_LISTED
    assert sum(item["count"] for item in found["victims_by_host"]) == VICTIMS_LISTED + 100
    back = incident_from_document(found)
    assert back.victim_count == VICTIMS_LISTED + 100
    assert back.victims_by_host() == {"host-0": 178, "host-1": 178}


def test_a_later_verdict_of_the_same_fault_finds_the_incident_written_first() -> None:
    book = IncidentBook()
    book.load(stored(incident(first_us=T0)), T0)
    # A late host's error, a minute earlier: the verdict's first failure moves.
    assert book.match(incident(first_us=T0 - MINUTE, victims=5), set()).id == "id-1"
    # Another communicator, sharing no process: another fault.
    other = incident(communicator="tp-3", root_host="host-c", victims=0)
    other.root_cause = [Place(host="host-c", device=0, rank=0, communicator="tp-3", pid=9)]
    assert book.match(other, set()) is None
    # The same communicator two days later: another fault.
    assert book.match(incident(first_us=T0 + 48 * 60 * MINUTE), set()) is None
    # Taken this round by a bigger verdict already.
    assert book.match(incident(), {"id-1"}) is None


def test_an_incident_s_id_is_made_from_its_communicator_and_first_failure() -> None:
    # The same in every process (a correlator restarted, a second one, `--once` beside them
    # must find an incident by it): not Python's hash, which differs from run to run.
    code = (
        "from npuwatch.cluster.incident_document import incident_id;"
        f"print(incident_id('world', {T0}), incident_id(None, None))"
    )
    runs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout.split()[0]
        for seed in ("1", "2")
    }
    assert runs == {incident_id("world", T0)}
    assert re.fullmatch(r"[A-Za-z0-9_-]{20}", incident_id("world", T0))
    assert incident_id("world", T0) != incident_id("world", T0 + 1)
    assert incident_id("world", T0) != incident_id("tp-0", T0)


def test_a_stored_incident_reads_back_with_its_status_for_the_report() -> None:
    document = incident_document("id-1", verdict(incident(), False), None, T0, "recovered")
    back = incident_from_document(document["ascend"]["incident"])
    assert back.status == "closed: recovered"
    assert back.root_cause == incident().root_cause
    assert back.first_us == T0
