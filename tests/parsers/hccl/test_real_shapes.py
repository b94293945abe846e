"""Line shapes real collections hold and the first fixtures lacked (CORRELATION.md §5.1-3,
formats/hccl-init-and-link.md §1): each read into the fact or event it states. The lines are
written here from the format notes, with this project's own values."""

from __future__ import annotations

from datetime import timezone

import pytest

from npuwatch.parsers.hccl import failures
from npuwatch.parsers.hccl.identity import setting, timeouts
from npuwatch.parsers.slog import from_tolerant
from npuwatch.parsers.timestamps import LocalClock


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("HCCL_CONNECT_TIMEOUT set by environment to [480]s", ("connect_timeout_s", 480.0)),
        (
            "environmental variable HCCL_CONNECT_TIMEOUT is set, timeOut[300]",
            ("connect_timeout_s", 300.0),
        ),
        ("ExecTimeOut is set to timeOut[900]", ("exec_timeout_s", 900.0)),
        (
            "[HCCL_ENV] HCCL_EXEC_TIMEOUT set by environment to [1836.50]s",
            ("exec_timeout_s", 1836.5),
        ),
    ],
)
def test_timeouts_are_read_in_every_wording(line: str, said: tuple[str, float]) -> None:
    assert [(name, value) for name, value, _ in timeouts(line)] == [said]


def test_a_setting_set_by_environment_with_decimals_equals_the_default_without() -> None:
    assert setting("[HCCL_ENV] HCCL_EXEC_TIMEOUT set by environment to [1836.00]s") == (
        setting("[HCCL_ENV] HCCL_EXEC_TIMEOUT set by default to [1836]s")
    )
    assert setting("HCCL_IF_IP is set to [10.0.0.1]") is None  # a host's own address differs


def test_a_link_row_without_port_columns_names_its_peer_and_its_own_address() -> None:
    row = failures.link_row("   |  10.1.0.2(5)   |   10.1.0.9(12)   |  client  | no connect |")
    assert row is not None
    assert (row["remote_ip"], row["remote_rank"], row["own_ip"], row["own_rank"]) == (
        "10.1.0.2",
        5,
        "10.1.0.9",
        12,
    )
    assert (row["link_role"], row["link_status"]) == ("client", "no connect")


def test_the_op_index_on_a_base_line_is_read() -> None:
    base = failures.task_base(
        "[TaskExecStage][Timeout][HOST_TS]Task run failed, base information is streamID:[3], "
        "taskID[9], taskType[Notify Wait], tag[AllReduce_world], index[41], AlgType(level 0-1-2):[x]"
    )
    assert base is not None
    assert (base["kind"], base["op_index"]) == ("notify", 41)


def test_the_older_ffts_triplet_spelling_opens_a_block() -> None:
    base = failures.task_base(
        "[TaskExceptionHandler][DealExceptionOp]FFTS+ run failed, base infomation is "
        "streamID:[1], taskID[4], tag[Allreduce_world], AlgType(level 0-1-2):[ring]."
    )
    assert base is not None and base["kind"] == "ffts"


@pytest.mark.parametrize(
    "line",
    [
        "[TaskExecStage][HeartbeatAbnormal]local rank [10.1.0.1/0]: crimer rank [10.1.0.3/6] "
        "status[LOST] by informer rank [10.1.0.3/7]",
        "[HCCL_TRACE]rank [10.1.0.1/0]: rank [10.1.0.3/6] status[LOST] by rank [10.1.0.3/7]",
    ],
)
def test_the_heartbeats_own_verdict_names_the_device_it_lost(line: str) -> None:
    read = failures.cluster_exception(line)
    assert read is not None
    assert (read["remote_server"], read["remote_device"], read["exception_type"]) == (
        "10.1.0.3",
        6,
        "LOST",
    )


@pytest.mark.parametrize(
    ("header", "expected_us"),
    [
        ("[ERROR] HCCL(51,python):2025-9-4-01:20:11.205.229 body", 205_229),
        ("[ERROR] HCCL(51,python):2025-09-04-01:20:11.205229 body", 205_229),
        ("[ERROR] HCCL(51,python):2025-09-04-01:20:11.205 body", 205_000),
    ],
)
def test_headers_of_collected_and_edited_logs_keep_their_time(
    header: str, expected_us: int
) -> None:
    record = from_tolerant(header, 0, LocalClock(timezone.utc))
    assert record is not None and record.pid == 51
    assert record.timestamp_us is not None
    assert record.timestamp_us % 1_000_000 == expected_us


@pytest.mark.parametrize(
    ("line", "link"),
    [
        (
            "[137400]TRANSPORT DETECT EVENT[1]:Rank[10.1.0.1/0]: srcRank[10.1.0.1/0] connect "
            "destRank[10.1.0.2/6] fail.",
            ("10.1.0.1", 0, "10.1.0.2", 6),
        ),
        (
            "This node (server 10.1.0.1, device ID 3) detects that srcRank (server 10.1.0.1, "
            "device ID 3) fails to connect to dstRank (server 10.1.0.2, device ID 5). Check the "
            "link.",
            ("10.1.0.1", 3, "10.1.0.2", 5),
        ),
    ],
)
def test_hccls_connection_probe_names_the_link_in_both_wordings(
    line: str, link: tuple[str, int, str, int]
) -> None:
    read = failures.probe(line)
    assert read is not None
    ends = (
        read["source_server"],
        read["source_device"],
        read["remote_server"],
        read["remote_device"],
    )
    assert ends == link


def test_a_probe_that_found_nothing_names_no_link() -> None:
    assert failures.probe("This node detects no exception event. srcRank ok") is None


@pytest.mark.parametrize(
    "line",
    [
        "[PID: 335] 2026-03-13-06:55:06.896.485 Execution_Error_ROCE_CQE(EI0013): An error CQE "
        "occurred during operator execution. Local information: server 10.1.0.9, device ID 3, "
        "device IP 10.2.0.9. Peer information: server 10.1.0.5, device ID 3, device IP 10.2.0.5.",
        "[PID: 41] 2025-12-04-21:59:08.232.310 Execution Error ROCE CQE(EI0013): An error CQE "
        "occurred during operator execution. Local information: server 10.1.0.9, device ID 3, "
        "device IP 10.2.0.9. Peer information: server 10.1.0.5, device ID 3, device IP 10.2.0.5.",
    ],
)
def test_ei0013_names_both_ends_of_the_link_and_no_status(line: str) -> None:
    read = failures.cqe(line)
    assert read == {
        "kind": "cqe",
        "remote_ip": "10.2.0.5",
        "remote_server": "10.1.0.5",
        "remote_device": 3,
        "own_ip": "10.2.0.9",
    }
