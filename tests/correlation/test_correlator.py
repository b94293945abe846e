"""The correlator on facts and events made by hand: each decision, and input that is wrong."""

from __future__ import annotations

import random

import pytest

from npuwatch.correlation.correlator import Correlator
from npuwatch.correlation.incident import Incident
from npuwatch.parsers.hccl.model import CollectiveEvent, Extracted, Fact, ProcessKey

T0 = 1_765_400_000_000_000  # µs
S = 1_000_000


def member(
    host: str,
    pid: int,
    rank: int,
    count: int,
    comm: str = "world",
    device: int | None = None,
    ip: str | None = None,
    at: int = T0,
) -> list[Extracted]:
    key = ProcessKey(host, pid)
    said: list[Extracted] = [
        Fact(key, "rank", rank, at, comm),
        Fact(key, "rank_count", count, at, comm),
        Fact(key, "rendezvous", True, at, comm),
        Fact(key, "phy_device", rank % 4 if device is None else device, at),
    ]
    if ip is not None:
        said.append(Fact(key, "device_ip", ip, at))
    return said


def waits(
    host: str, pid: int, remote: int | str, at: int, comm: str = "world", **more: object
) -> CollectiveEvent:
    event = CollectiveEvent(
        "notify", ProcessKey(host, pid), at, communicator=comm, tag=f"AllReduce_{comm}"
    )
    if remote == "local":
        event.remote_local = True
    else:
        event.remote_rank = int(remote)
    for name, value in more.items():
        setattr(event, name, value)
    return event


def job(ranks: int = 8) -> list[Extracted]:
    """`ranks` processes, four per host (host-a, host-b, …), pid 100 + rank."""
    items: list[Extracted] = []
    for rank in range(ranks):
        items += member(
            f"host-{'abcd'[rank // 4]}", 100 + rank, rank, ranks, ip=f"192.168.1.{rank}"
        )
    return items


def verdicts(items: list[Extracted]) -> list[Incident]:
    correlator = Correlator()
    correlator.add_all(items)
    return correlator.incidents()


def roots(incident: Incident) -> list[tuple[str | None, int | None, bool]]:
    return [(p.host, p.rank, p.has_logs) for p in incident.root_cause]


def test_ranks_waiting_for_a_rank_that_never_reported_name_it_as_the_root() -> None:
    items = job() + [
        waits(f"host-{'abcd'[r // 4]}", 100 + r, 5, T0 + 100 * S + r) for r in range(8) if r != 5
    ]
    (incident,) = verdicts(items)
    assert incident.faultdiag_code == 112
    assert roots(incident) == [("host-b", 5, True)]
    assert len(incident.victims) == 7
    assert incident.victims_by_host() == {"host-a": 4, "host-b": 3}


def test_a_rank_without_logs_is_counted_against_the_rank_count_and_named_as_having_none() -> None:
    items = [i for i in job() if i.process.pid != 105]
    items += [waits(f"host-{'abcd'[r // 4]}", 100 + r, 5, T0 + 100 * S) for r in range(8) if r != 5]
    (incident,) = verdicts(items)
    assert incident.faultdiag_code == 112
    assert roots(incident) == [(None, 5, False)]
    assert [(p.rank, p.has_logs) for p in incident.unheard] == [(5, False)]


def test_the_verdict_does_not_depend_on_the_order_facts_and_events_arrive_in() -> None:
    items = job() + [
        waits(f"host-{'abcd'[r // 4]}", 100 + r, 5, T0 + 100 * S + r) for r in range(8) if r != 5
    ]
    expected = [i.to_dict() for i in verdicts(items)]
    for seed in range(5):
        shuffled = items[:]
        random.Random(seed).shuffle(shuffled)
        assert [i.to_dict() for i in verdicts(shuffled)] == expected


def test_a_verdict_can_be_asked_for_before_all_input_is_in_and_is_revised_after() -> None:
    correlator = Correlator()
    correlator.add_all(job())
    correlator.add(waits("host-a", 100, 5, T0 + 100 * S))
    early = correlator.incidents()
    assert early and early[0].faultdiag_code == 112
    for rank in range(1, 8):
        if rank != 3:
            correlator.add(waits(f"host-{'abcd'[rank // 4]}", 100 + rank, 3, T0 + 100 * S + rank))
    correlator.add(waits("host-a", 103, "local", T0 + 101 * S))
    (late,) = correlator.incidents()
    assert late.faultdiag_code == 125
    assert roots(late) == [("host-a", 3, True)]


def test_reports_spread_beyond_the_exec_timeout_the_processes_logged_blame_the_last() -> None:
    items = job()
    items += [
        Fact(ProcessKey(f"host-{'abcd'[r // 4]}", 100 + r), "exec_timeout_s", 300.0, T0)
        for r in range(8)
    ]
    items += [
        waits(f"host-{'abcd'[r // 4]}", 100 + r, (r + 1) % 8, T0 + 100 * S + r * S)
        for r in range(7)
    ]
    items.append(waits("host-b", 107, 0, T0 + 520 * S))
    (incident,) = verdicts(items)
    assert incident.faultdiag_code == 110
    assert roots(incident) == [("host-b", 7, True)]


def test_the_first_error_before_every_timeout_is_the_root_and_the_timeouts_are_victims() -> None:
    items = job()
    items.append(CollectiveEvent("error", ProcessKey("host-b", 106), T0 + 10 * S, module="RUNTIME"))
    items += [
        waits(f"host-{'abcd'[r // 4]}", 100 + r, 6, T0 + 1846 * S) for r in range(8) if r != 6
    ]
    items += [
        CollectiveEvent(
            "error", ProcessKey(f"host-{'abcd'[r // 4]}", 100 + r), T0 + 1846 * S, module="HCCL"
        )
        for r in range(8)
        if r != 6
    ]
    (incident,) = verdicts(items)
    assert incident.faultdiag_code == 113
    assert roots(incident) == [("host-b", 6, True)]
    assert "RUNTIME" in incident.summary


def test_two_communicators_failing_apart_in_time_and_ranks_are_two_incidents() -> None:
    items: list[Extracted] = []
    for rank in range(8):
        host = f"host-{'ab'[rank // 4]}"
        items += member(host, 100 + rank, rank % 4, 4, comm=f"tp{rank // 4}")
    items += [waits("host-a", 100 + r, 2, T0 + 100 * S, comm="tp0") for r in (0, 1, 3)]
    items += [waits("host-b", 104 + r, 1, T0 + 3000 * S, comm="tp1") for r in (0, 2, 3)]
    found = verdicts(items)
    assert sorted((i.communicator, roots(i)[0]) for i in found) == [
        ("tp0", ("host-a", 2, True)),
        ("tp1", ("host-b", 1, True)),
    ]


def test_a_rank_beyond_the_rank_count_and_a_negative_device_are_named_and_lower_confidence() -> (
    None
):
    clean = job() + [
        waits(f"host-{'abcd'[r // 4]}", 100 + r, 5, T0 + 100 * S) for r in range(8) if r != 5
    ]
    bad = [*clean, Fact(ProcessKey("host-a", 100), "phy_device", -2, T0)]
    bad.append(waits("host-a", 101, 42, T0 + 100 * S, op_index=None, tag="AllReduce_world"))
    (good,) = verdicts(clean)
    (worse,) = verdicts(bad)
    assert any("-2 is negative" in note for note in worse.notes)
    assert any("rank 42 of a 8-rank communicator" in note for note in worse.notes)
    assert worse.confidence < good.confidence
    assert roots(worse) == roots(good)


def test_two_processes_claiming_one_device_ip_are_named() -> None:
    items = job()
    items.append(Fact(ProcessKey("host-b", 106), "device_ip", "192.168.1.0", T0 + S))
    items += [waits(f"host-{'abcd'[r // 4]}", 100 + r, 5, T0 + 100 * S) for r in range(8) if r != 5]
    (incident,) = verdicts(items)
    assert any("device IP 192.168.1.0 claimed by" in note for note in incident.notes)


def test_an_event_of_an_unknown_communicator_still_gives_an_incident() -> None:
    items = [
        waits("host-a", 100, 3, T0, comm="never-seen"),
        waits("host-a", 101, 3, T0, comm="never-seen"),
    ]
    (incident,) = verdicts(items)
    assert incident.communicator == "never-seen"
    assert [(p.rank, p.has_logs) for p in incident.root_cause] == [(3, False)]


def test_a_host_whose_clock_is_an_hour_behind_is_corrected_before_ordering() -> None:
    items: list[Extracted] = []
    hour = 3600 * S
    for rank in range(12):
        host = f"host-{'abc'[rank // 4]}"
        skew = -hour if host == "host-c" else 0
        items += member(host, 100 + rank, rank, 12, at=T0 + skew)
    # the true first error: host-a rank 1; host-c's timeouts are stamped an hour early
    items.append(CollectiveEvent("error", ProcessKey("host-a", 101), T0 + 50 * S, module="RUNTIME"))
    for rank in range(12):
        if rank != 1:
            host = f"host-{'abc'[rank // 4]}"
            skew = -hour if host == "host-c" else 0
            items.append(waits(host, 100 + rank, 1, T0 + 1900 * S + skew))
            items.append(
                CollectiveEvent(
                    "error", ProcessKey(host, 100 + rank), T0 + 1900 * S + skew, module="HCCL"
                )
            )
    (incident,) = verdicts(items)
    assert incident.faultdiag_code == 113
    assert roots(incident) == [("host-a", 1, True)]
    assert any("host-c" in note and "3,600 s behind" in note for note in incident.notes)


def test_an_error_the_rank_outlived_gives_no_incident() -> None:
    items = [*job(), CollectiveEvent("error", ProcessKey("host-a", 100), T0, module="RUNTIME")]
    items.append(Fact(ProcessKey("host-a", 100), "heard", T0 + 61 * S, T0 + 61 * S))
    assert verdicts(items) == []


def test_errors_that_were_ranks_last_words_are_errors_without_timeout() -> None:
    """FaultDiag 101: the job stopped before any HCCL timeout could fire."""
    items = job()
    for rank, late in ((6, 0), (2, 30)):
        key = ProcessKey(f"host-{'ab'[rank // 4]}", 100 + rank)
        items.append(CollectiveEvent("error", key, T0 + (600 + late) * S, module="RUNTIME"))
        items.append(Fact(key, "heard", T0 + (620 + late) * S, T0 + (620 + late) * S))
    (incident,) = verdicts(items)
    assert incident.kind == "errors_without_timeout"
    assert incident.faultdiag_code == 101
    assert roots(incident) == [("host-b", 6, True), ("host-a", 2, True)]
    assert incident.communicator == "world"
    assert incident.victims == []


def test_errors_of_ranks_not_in_a_job_of_several_ranks_give_no_incident() -> None:
    key = ProcessKey("host-a", 100)
    items: list[Extracted] = [*member("host-a", 100, 0, 1, comm="alone")]
    items.append(CollectiveEvent("error", key, T0 + 600 * S, module="RUNTIME"))
    assert verdicts(items) == []


def test_init_entry_lines_minutes_apart_are_no_clock_skew() -> None:
    """Members reach the init entry up to HCCL_CONNECT_TIMEOUT apart (CORRELATION.md §5.8):
    only lines printed after the exchange completed say how far a clock is off."""
    items: list[Extracted] = []
    for rank in range(8):
        host = f"host-{'ab'[rank // 4]}"
        key = ProcessKey(host, 100 + rank)
        entry = T0 + (600 * S if host == "host-b" else 0)  # host-b started ten minutes later
        items += [
            Fact(key, "rank", rank, entry, "world"),
            Fact(key, "rank_count", 8, entry, "world"),
        ]
        items.append(Fact(key, "rendezvous", True, T0 + 601 * S, "world"))
    items += [
        waits(f"host-{'ab'[r // 4]}", 100 + r, 5, T0 + 900 * S + r) for r in range(8) if r != 5
    ]
    (incident,) = verdicts(items)
    assert not any("clock" in note for note in incident.notes)
    assert roots(incident) == [("host-b", 5, True)]


def test_a_clock_correction_never_splits_a_burst_tight_on_the_raw_clocks() -> None:
    items: list[Extracted] = []
    for rank in range(8):
        host = f"host-{'ab'[rank // 4]}"
        key = ProcessKey(host, 100 + rank)
        # the rendezvous says host-b is an hour ahead, but its timeouts are stamped with the
        # others' to the second: the correction would cut one burst into two faults
        late = 3600 * S if host == "host-b" else 0
        items += [Fact(key, "rank", rank, T0, "world"), Fact(key, "rank_count", 8, T0, "world")]
        items.append(Fact(key, "rendezvous", True, T0 + late, "world"))
    items += [
        waits(f"host-{'ab'[r // 4]}", 100 + r, 5, T0 + 4000 * S + r) for r in range(8) if r != 5
    ]
    (incident,) = verdicts(items)
    assert len(incident.victims) == 7
    assert any("not corrected" in note for note in incident.notes)


def test_ranks_that_timed_out_under_a_setting_the_others_lack_are_the_root_cause() -> None:
    items = job()
    for rank in range(8):
        value = "300" if rank in (6, 7) else "120"
        key = ProcessKey(f"host-{'ab'[rank // 4]}", 100 + rank)
        items.append(Fact(key, "setting", f"HCCL_CONNECT_TIMEOUT={value}", T0))
    items += [waits(f"host-{'ab'[r // 4]}", 100 + r, 5, T0 + 100 * S + r) for r in range(8)]
    (incident,) = verdicts(items)
    assert incident.kind == "setting_mismatch"
    assert incident.faultdiag_code is None
    assert sorted(roots(incident)) == [("host-b", 6, True), ("host-b", 7, True)]
    assert "HCCL_CONNECT_TIMEOUT" in incident.summary


def test_a_setting_split_evenly_names_both_groups() -> None:
    items = job(4)
    for rank in range(4):
        key = ProcessKey("host-a", 100 + rank)
        items.append(
            Fact(key, "setting", f"HCCL_ALGO=level0:{'ring' if rank < 2 else 'fullmesh'}", T0)
        )
    items += [waits("host-a", 100 + r, (r + 1) % 4, T0 + 100 * S + r) for r in range(4)]
    (incident,) = verdicts(items)
    assert incident.kind == "setting_mismatch"
    assert len(incident.root_cause) == 4


def test_a_chain_that_waits_across_a_long_gap_is_one_fault() -> None:
    """Rank 2 waited on rank 5 at once; the others waited on rank 2 an hour later: the chain
    goes on across the gap, so it is one fault ending at rank 5 (CORRELATION.md §5.7)."""
    items = job()
    items.append(waits("host-a", 102, 5, T0 + 100 * S))
    items += [
        waits(f"host-{'ab'[r // 4]}", 100 + r, 2, T0 + 4000 * S + r)
        for r in range(8)
        if r not in (2, 5)
    ]
    (incident,) = verdicts(items)
    assert roots(incident) == [("host-b", 5, True)]


def test_a_failure_stamped_before_its_process_began_init_opens_no_fault_of_its_own() -> None:
    items = job()
    items.append(waits("host-a", 101, 5, T0 - 365 * 24 * 3600 * S))  # a year early: mis-stamped
    items += [
        waits(f"host-{'ab'[r // 4]}", 100 + r, 5, T0 + 100 * S + r) for r in range(8) if r != 5
    ]
    (incident,) = verdicts(items)
    assert roots(incident) == [("host-b", 5, True)]
    assert any("stamped before" in note for note in incident.notes)


def test_a_rank_that_called_an_allreduce_with_another_count_is_the_root_cause() -> None:
    items = job()
    for rank in range(8):
        detail = "count 4096, float16" if rank == 3 else "count 1024, float16"
        items.append(
            waits(
                f"host-{'ab'[rank // 4]}",
                100 + rank,
                (rank + 1) % 8,
                T0 + 100 * S + rank,
                op_index=7,
                detail=detail,
            )
        )
    (incident,) = verdicts(items)
    assert incident.kind == "exec_param_mismatch"
    assert roots(incident) == [("host-a", 3, True)]


def test_an_alltoallv_whose_counts_differ_by_design_is_no_parameter_mismatch() -> None:
    items = job()
    for rank in range(8):
        event = waits(
            f"host-{'ab'[rank // 4]}",
            100 + rank,
            (rank + 1) % 8,
            T0 + 100 * S + rank,
            op_index=7,
            detail=f"count {1024 * (rank + 1)}, float16",
        )
        event.tag = "AlltoAllV_world"
        items.append(event)
    (incident,) = verdicts(items)
    assert incident.kind != "exec_param_mismatch"


def probe(
    host: str, pid: int, at: int, src: tuple[str, int], dst: tuple[str, int]
) -> CollectiveEvent:
    event = CollectiveEvent("probe", ProcessKey(host, pid), at, communicator="world")
    event.source_server, event.source_device = src
    event.remote_server, event.remote_device = dst
    return event


def test_hccls_connection_probe_alone_opens_no_incident() -> None:
    items = [*job(), probe("host-a", 101, T0 + 200 * S, ("10.0.0.11", 1), ("10.0.0.12", 1))]
    assert verdicts(items) == []


@pytest.mark.parametrize(
    ("dst", "says"),
    [
        (("10.0.0.12", 1), "host-a dev 1 (rank 1) failed to connect to host-b dev 1 (rank 5)"),
        (("10.0.0.11", 2), "(not an end of the root cause named here)"),
    ],
)
def test_a_probe_beside_a_verdict_is_a_note_that_says_when_it_names_another_link(
    dst: tuple[str, int], says: str
) -> None:
    items = job() + [
        Fact(ProcessKey(f"host-{'ab'[r // 4]}", 100 + r), "host_ip", f"10.0.0.1{1 + r // 4}", T0)
        for r in range(8)
    ]
    items += [
        waits(f"host-{'ab'[r // 4]}", 100 + r, 5, T0 + 100 * S + r) for r in range(8) if r != 5
    ]
    items.append(probe("host-a", 101, T0 + 101 * S, ("10.0.0.11", 1), dst))
    (incident,) = verdicts(items)
    assert roots(incident) == [("host-b", 5, True)]
    notes = [note for note in incident.notes if note.startswith("HCCL's connection probe")]
    assert len(notes) == 1 and notes[0].endswith(says)
    assert [place.address for place in incident.unheard] == []


def test_a_live_stream_never_takes_a_ranks_last_errors_for_a_fault() -> None:
    """A quiet rank may be alive: at CANN's default log level a healthy rank writes nothing."""
    items = job()
    for rank in (6, 2):
        key = ProcessKey(f"host-{'ab'[rank // 4]}", 100 + rank)
        items.append(CollectiveEvent("error", key, T0 + 600 * S, module="RUNTIME"))
    live = Correlator(input_is_complete=False)
    live.add_all(items)
    assert live.incidents() == []
    assert [incident.kind for incident in verdicts(items)] == ["errors_without_timeout"]
