"""How an incident reads in `scan`, `correlate` and `incident show`: victims named where no
host is known, evidence a path that can be copied and a place in the file."""

from __future__ import annotations

from datetime import timezone

from npuwatch.correlation.incident import Incident, Place
from npuwatch.correlation.report_text import render_incidents
from npuwatch.parsers.hccl.model import Evidence
from npuwatch.terminal import Palette

T0 = 1_757_842_531_000_000
LONG = "/data/jobs/llama-70b-pretrain-2025-09-14/host-b/ascend/log/debug/plog/plog-3306_20250914093300120.log"


def one(victims: list[Place], evidence: list[Evidence]) -> list[str]:
    root = Place(host=None, device=2, rank=6, communicator="world", pid=3306)
    incident = Incident(
        "errors_without_timeout",
        "pid 3306 failed first",
        "world",
        [root],
        [],
        victims,
        [],
        evidence,
        0.3,
        first_us=T0,
    )
    return render_incidents([incident], timezone.utc, Palette(False))


def field(lines: list[str], label: str) -> list[str]:
    """Each value of the label, its wrapped lines joined with a space (a path is never cut:
    only the spaces between words break it)."""
    found: list[str] = []
    for number, line in enumerate(lines):
        if line.startswith(f"  {label:<11} "):
            value = line
            for more in lines[number + 1 :]:
                if not more.startswith(" " * 14) or more.startswith("  " + " " * 12 + "["):
                    break
                value += " " + more.strip()
            found.append(value)
    return found


def test_victims_without_a_host_are_named_not_counted_under_a_dash() -> None:
    """Before: "victims     1: - 1" for the logs of one folder."""
    lines = one([Place(host=None, device=None, rank=2, communicator="world", pid=4000)], [])
    assert field(lines, "victims") == ["  victims     1: pid 4000 (rank 2)"]
    many = [Place(host=None, rank=n, communicator="world", pid=4000 + n) for n in range(11)]
    (line,) = field(one(many, []), "victims")
    assert line.startswith("  victims     11: pid 4000 (rank 0), pid 4001 (rank 1), ")
    assert line.endswith(" and 3 more")


def test_victims_on_hosts_are_counted_by_host() -> None:
    victims = [Place(host=f"host-{n % 2}", rank=n, pid=n) for n in range(5)]
    assert field(one(victims, []), "victims") == ["  victims     5: host-0 3, host-1 2"]


def test_a_long_evidence_path_stays_whole_with_its_line_or_byte_offset() -> None:
    lines = one(
        [],
        [
            Evidence(LONG, 22, "[ERROR] HCCL(3306,python3) …", T0),
            Evidence(LONG, None, "[ERROR] HCCL(3306,python3) …", T0, 8192),  # an agent's
        ],
    )
    assert field(lines, "evidence") == [
        f"  evidence    {LONG}:22",
        f"  evidence    {LONG} (byte 8192)",
    ]
