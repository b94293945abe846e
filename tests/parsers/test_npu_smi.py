"""`npu-smi info` tables: every real sample of the formats doc, read from the doc at test time.

The samples live in ../shared/design/formats/npu_smi.md and are never copied here. Each fenced
block that holds an npu-smi table is named by its section heading (`1.1`, and `2.2#2` for the
second block under one heading); the expectations below were written by reading the doc.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from npuwatch.parsers.npu_smi import NpuChip, NpuProcess, NpuSmiReport, parse_npu_smi
from tests.npu_smi_samples import load_doc_samples

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def doc_samples() -> dict[str, str]:
    return load_doc_samples()


def chip(
    npu: int,
    name: str,
    power: float | None,
    temp: float,
    bus: str,
    memory: tuple[int, int],
    hbm: tuple[int, int] | None,
    *,
    chip_id: int = 0,
    health: str = "OK",
    hugepages: tuple[int, int] | None = (0, 0),
    device: int | None = None,
    phy: int | None = None,
) -> NpuChip:
    """A chip written the way its table rows read (MB, percent) and converted to base units."""
    return NpuChip(
        npu_id=npu,
        chip_id=chip_id,
        name=name,
        health=health,
        power_watts=power,
        temperature_celsius=temp,
        hugepages_used=None if hugepages is None else hugepages[0],
        hugepages_total=None if hugepages is None else hugepages[1],
        bus_id=bus,
        aicore_ratio=0.0,
        memory_used_bytes=memory[0] * MIB,
        memory_total_bytes=memory[1] * MIB,
        hbm_used_bytes=None if hbm is None else hbm[0] * MIB,
        hbm_total_bytes=None if hbm is None else hbm[1] * MIB,
        device_id=device,
        phy_id=phy,
    )


def process(npu: int, chip_id: int, pid: int, name: str, mb: int) -> NpuProcess:
    return NpuProcess(npu, chip_id, pid, name, mb * MIB, None)


@dataclass(frozen=True)
class Expected:
    version: tuple[str, str] | None
    chip_count: int
    first_chip: NpuChip
    processes: tuple[NpuProcess, ...] = ()
    idle_npus: tuple[int, ...] = ()
    problem_lines: tuple[int, ...] = ()
    """Indexes (0-based) into the sample's lines of the rows reported as problems."""
    more_chips: dict[int, NpuChip] = field(default_factory=dict)


EXPECTED: dict[str, Expected] = {
    "1.1": Expected(
        ("23.0.rc2", "23.0.rc2"),
        3,
        chip(0, "910B1", 88.4, 46, "0000:C1:00.0", (0, 0), (4175, 65536)),
        more_chips={2: chip(7, "910B1", 92.7, 48, "0000:42:00.0", (0, 0), (4174, 65536))},
    ),
    # The excerpt's last line lost its closing `|` but kept every value: still read.
    "1.2": Expected(
        ("24.1.0.3", "24.1.0.3"),
        3,
        chip(0, "910B2", 96.4, 37, "0000:C1:00.0", (0, 0), (3397, 65536)),
        more_chips={2: chip(2, "910B2", 92.6, 37, "0000:81:00.0", (0, 0), (3396, 65536))},
    ),
    "1.3": Expected(None, 3, chip(0, "910B3", 97.5, 41, "0000:C1:00.0", (0, 0), (3379, 65536))),
    "1.4": Expected(
        ("25.2.0", "25.2.0"),
        2,
        chip(0, "910B4-1", 91.3, 33, "0000:xx:00.0", (0, 0), (3197, 65536)),
    ),
    "1.5": Expected(
        ("25.5.1", "25.5.1"),
        1,
        chip(2, "910B2C", 87.8, 31, "0000:52:00.0", (0, 0), (3406, 65536)),
    ),
    "1.6": Expected(None, 1, chip(0, "910B3", 90.4, 32, "0000:C1:00.0", (0, 0), (41697, 65536))),
    # The excerpt ends inside NPU 1's second row (no HBM pair): one problem, two whole chips.
    "2.1": Expected(
        ("24.1.rc3.7", "24.1.rc3.7"),
        2,
        chip(0, "Ascend910", 178.8, 36, "0000:9D:00.0", (0, 0), (3397, 65536), phy=0),
        problem_lines=(14,),
        more_chips={
            1: chip(
                0, "Ascend910", None, 36, "0000:9F:00.0", (0, 0), (3186, 65536), chip_id=1, phy=1
            )
        },
    ),
    "2.2#1": Expected(
        ("26.0.rc2", "26.0.rc2"),
        2,
        chip(0, "Ascend910", 162.6, 34, "0000:9D:00.0", (0, 0), (3419, 65536), phy=0),
        more_chips={
            1: chip(
                0, "Ascend910", None, 34, "0000:9F:00.0", (0, 0), (2874, 65536), chip_id=1, phy=1
            )
        },
    ),
    # No header in this excerpt, so the `15` (Phy-ID on A3) is not given a meaning.
    "2.2#2": Expected(
        None,
        1,
        chip(7, "Ascend910", None, 35, "0000:83:00.0", (0, 0), (31877, 65536), chip_id=1),
        processes=(NpuProcess(0, 0, 632268, "python3.1", 197 * MIB, None),),
        idle_npus=(1, 2),
    ),
    # The last process row is cut after the name: a problem, not a process without memory.
    "2.3": Expected(
        None,
        2,
        chip(7, "Ascend910", 172.0, 53, "0000:81:00.0", (0, 0), (15503, 65536)),
        processes=(NpuProcess(0, 0, 692318, "python3", 12417 * MIB, None),),
        problem_lines=(11,),
    ),
    "3.1": Expected(
        ("22.0.3.1", "22.0.3.1"),
        3,
        chip(0, "910A", 67.2, 43, "0000:61:00.0", (1867, 15077), (0, 32768), hugepages=(15, 15)),
    ),
    "3.2": Expected(
        ("24.1.RC2", "24.1.RC2"),
        2,
        chip(0, "xxx", 70.5, 42, "0000:C1:00.0", (4252, 15137), (0, 32768), hugepages=(1232, 1232)),
        processes=(
            process(0, 0, 37656, "hlt_host_devmm_", 686),
            process(0, 0, 37664, "hlt_host_devmm_", 686),
        ),
        more_chips={
            1: chip(
                3,
                "xxx",
                206.9,
                39,
                "0000:01:00.0",
                (3616, 15039),
                (0, 32768),
                health="Warning",
                hugepages=(1232, 1232),
            )
        },
    ),
    "3.3": Expected(
        ("23.0.5", "23.0.5"),
        1,
        chip(0, "xxx", 73.1, 37, "0000:61:00.0", (920, 13553), (0, 32768)),
        idle_npus=(0,),
    ),
    "3.4": Expected(
        ("23.0.rc3", "23.0.rc2.3"),
        1,
        chip(
            0,
            "xxx",
            73.4,
            44,
            "0000:C1:00.0",
            (4565, 15137),
            (30710, 32768),
            hugepages=(1123, 1123),
        ),
        processes=(process(0, 0, 139667, "python", 30780), process(1, 0, 139577, "python", 30782)),
    ),
    "4.1": Expected(
        ("25.2.0", "25.2.0"),
        2,
        chip(2, "310P3", None, 45, "0000:01:00.0", (1529, 44280), None, device=0),
        more_chips={
            1: chip(2, "310P3", None, 43, "0000:01:00.0", (1412, 43693), None, chip_id=1, device=1)
        },
    ),
    "4.2": Expected(
        ("22.0.0", "22.0.2"),
        1,
        chip(0, "310P3", 16.2, 42, "0000:86:00.0", (994, 21534), None, device=0),
    ),
    "4.3#1": Expected(
        ("21.0.4", "21.0.4.B030"),
        2,
        chip(6, "310", 12.8, 73, "0000:89:00.0", (2703, 8192), None, hugepages=(0, 970), device=3),
    ),
    "4.3#2": Expected(
        ("20.2.0", "20.2.0"),
        1,
        chip(215, "310", 12.8, 56, "0000:DA:00.0", (2703, 8192), None, hugepages=None, device=0),
    ),
}


def test_the_doc_holds_exactly_the_samples_these_expectations_were_written_for(
    doc_samples: dict[str, str],
) -> None:
    assert sorted(doc_samples) == sorted(EXPECTED)


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_each_real_sample_gives_its_chips_processes_and_problems(
    key: str, doc_samples: dict[str, str]
) -> None:
    expected = EXPECTED[key]
    report = parse_npu_smi(doc_samples[key])
    lines = doc_samples[key].splitlines()

    assert (report.npu_smi_version, report.driver_version) == (expected.version or (None, None))
    assert len(report.chips) == expected.chip_count
    assert report.chips[0] == expected.first_chip
    for index, other in expected.more_chips.items():
        assert report.chips[index] == other
    assert report.processes == expected.processes
    assert report.npus_without_processes == expected.idle_npus
    assert [(p.line_number, p.text) for p in report.problems] == [
        (i + 1, lines[i]) for i in expected.problem_lines
    ]


HEADER_910B = """\
| npu-smi 24.1.0.3                 Version: 24.1.0.3                                             |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
"""


def test_na_and_dash_are_read_as_unknown() -> None:
    report = parse_npu_smi(
        HEADER_910B
        + "| 0     910B2               | Warning       | NA          -                 -    / NA            |\n"
        + "| 0                         | 0000:C1:00.0  | -           NA   / 0          3397 / -             |\n"
    )
    (only,) = report.chips
    assert (only.power_watts, only.temperature_celsius, only.aicore_ratio) == (None, None, None)
    assert (only.hugepages_used, only.hugepages_total) == (None, None)
    assert (only.memory_used_bytes, only.memory_total_bytes) == (None, 0)
    assert (only.hbm_used_bytes, only.hbm_total_bytes) == (3397 * MIB, None)
    assert only.health == "Warning" and not only.healthy
    assert report.problems == ()


def test_used_total_pairs_are_read_with_or_without_spaces_around_the_slash() -> None:
    report = parse_npu_smi(
        HEADER_910B
        + "| 0     910B3               | OK            | 90.4        32                12/ 34           |\n"
        + "| 0                         | 0000:C1:00.0  | 57          100/200       41697/65536          |\n"
    )
    (only,) = report.chips
    assert (only.hugepages_used, only.hugepages_total) == (12, 34)
    assert (only.memory_used_bytes, only.memory_total_bytes) == (100 * MIB, 200 * MIB)
    assert (only.hbm_used_bytes, only.hbm_total_bytes) == (41697 * MIB, 65536 * MIB)
    assert only.aicore_ratio == pytest.approx(0.57)


def test_an_a3_npu_gives_two_chips_with_their_physical_ids(doc_samples: dict[str, str]) -> None:
    report = parse_npu_smi(doc_samples["2.2#1"])
    first, second = report.chips
    assert (first.npu_id, first.chip_id, first.phy_id, first.device_id) == (0, 0, 0, None)
    assert (second.npu_id, second.chip_id, second.phy_id, second.device_id) == (0, 1, 1, None)
    assert first.power_watts == 162.6 and second.power_watts is None


def test_a_malformed_row_is_reported_with_its_line_and_the_rest_is_still_read() -> None:
    text = (
        HEADER_910B
        + "| 0     910B2               | OK            | hot         37                0    / 0             |\n"
        + "| 0                         | 0000:C1:00.0  | 0           0    / 0          3397 / 65536         |\n"
        + "| 1     910B2               | OK            | 88.7        37                0    / 0             |\n"
        + "| 0                         | 0000:C2:00.0  | 0           0    / 0          3395 / 65536         |\n"
    )
    report = parse_npu_smi(text)
    assert [chip.npu_id for chip in report.chips] == [1]
    lines = text.splitlines()
    assert [(p.line_number, p.text) for p in report.problems] == [(6, lines[5]), (7, lines[6])]
    assert "'hot'" in report.problems[0].reason


def test_text_that_is_not_a_table_gives_an_empty_report() -> None:
    assert parse_npu_smi("$ npu-smi info\nbash: npu-smi: command not found\n") == NpuSmiReport(
        None, None, (), (), (), ()
    )


def test_a_process_table_with_a_container_pid_column_reads_it() -> None:
    report = parse_npu_smi(
        "| NPU     Chip              | Process id    | Process name       | Process memory(MB)    | Process id in container |\n"
        "| 3       1                 | 632268        | python3            | 197                   | 41                      |\n"
    )
    assert report.processes == (NpuProcess(3, 1, 632268, "python3", 197 * MIB, 41),)


@pytest.mark.parametrize(
    ("power", "hbm_total"),
    [("inf", "65536"), ("nan", "65536"), ("88.7", str(2**70)), ("1" + "0" * 400, "65536")],
)
def test_a_reading_that_is_no_finite_number_within_64_bits_is_a_malformed_row(
    power: str, hbm_total: str
) -> None:
    text = (
        HEADER_910B
        + f"| 0     910B2               | OK            | {power}        37                0    / 0             |\n"
        + f"| 0                         | 0000:C1:00.0  | 0           0    / 0          3397 / {hbm_total}         |\n"
        + "| 1     910B2               | OK            | 88.7        37                0    / 0             |\n"
        + "| 0                         | 0000:C2:00.0  | 0           0    / 0          3395 / 65536         |\n"
    )
    report = parse_npu_smi(text)
    assert [chip.npu_id for chip in report.chips] == [1]
    # The chip's two rows go together: the row with the bad value is named, and the row left
    # without its mate too.
    assert [p.line_number for p in report.problems] == ([6, 7] if power != "88.7" else [7])
