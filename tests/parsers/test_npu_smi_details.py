"""`npu-smi info` detail outputs (`-t <type>`, `-m`, `-l`, `-t topo`): every real sample of the
formats doc's §5–§7, read from the doc at test time.

The samples live in ../shared/design/formats/npu_smi.md and are never copied here. Each fenced
block of §5–§7 is named by its section heading (`7.1`, and `7.2#2` for the second block under
one heading); the expectations below were written by reading the doc. The doc has no multi-chip
`-t` output, so the two-chip cases are built from a real one-chip sample by repeating its chip
paragraph as chip 1 with one value changed.
"""

from __future__ import annotations

import pytest

from npuwatch.parsers.npu_smi import Problem
from npuwatch.parsers.npu_smi_details import (
    KeyValueBlock,
    KeyValueReport,
    parse_key_value_output,
)
from tests.npu_smi_samples import load_detail_samples

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def samples() -> dict[str, str]:
    return load_detail_samples()


# The doc also holds `-m` and `-t topo` samples; npuwatch reads neither (nothing uses them).
MAPPING_SAMPLES = ("5#1", "5#2")
KEY_VALUE_SAMPLES = (
    "6#1",
    "6#2",
    "6#3",
    "6#4",
    "7.1",
    "7.2#1",
    "7.2#2",
    "7.2#3",
    "7.3",
    "7.4#1",
    "7.4#2",
    "7.5",
    "7.6",
)
TOPOLOGY_SAMPLE = "7.7"
HELP_SAMPLE = "7.8"
"""`npu-smi info -h`: usage text, not an output any parser here reads."""

BLOCKS: dict[str, list[tuple[int | None, int | None, str | None, int]]] = {
    # (NPU id, chip id, chip name, number of keys) of each block, in print order.
    "6#1": [(0, None, None, 2), (0, 0, None, 13)],
    "6#2": [(0, None, None, 2), (0, 0, None, 15)],
    "6#3": [(0, None, None, 2), (0, 0, None, 12)],
    "6#4": [(1, None, None, 2), (1, 0, None, 15)],
    # The MCU block after the chip is its own block, not more of chip 0 (doc §7.1).
    "7.1": [(1, None, None, 2), (1, 0, None, 9), (1, None, "mcu", 2)],
    "7.2#1": [(0, None, None, 15)],
    "7.2#2": [(0, 0, "xxx", 13)],
    "7.2#3": [(0, None, None, 19)],
    "7.3": [(None, None, None, 3)],
    "7.4#1": [(0, None, None, 2), (0, 0, None, 2), (0, None, "MCU", 3)],
    "7.4#2": [(0, None, None, 2), (0, 0, None, 2)],
    "7.5": [(1, None, None, 2), (1, 0, None, 13)],
    "7.6": [(None, None, None, 1), (0, None, None, 2), (1, None, None, 2)],
}


def shape(report: KeyValueReport) -> list[tuple[int | None, int | None, str | None, int]]:
    return [(b.npu_id, b.chip_id, b.chip_name, len(b.values)) for b in report.blocks]


def test_the_doc_holds_exactly_the_samples_these_tests_were_written_for(
    samples: dict[str, str],
) -> None:
    expected = {*MAPPING_SAMPLES, *KEY_VALUE_SAMPLES, TOPOLOGY_SAMPLE, HELP_SAMPLE}
    assert sorted(samples) == sorted(expected)


@pytest.mark.parametrize("key", KEY_VALUE_SAMPLES)
def test_each_real_key_value_sample_gives_its_blocks_without_problems(
    key: str, samples: dict[str, str]
) -> None:
    report = parse_key_value_output(samples[key])
    assert shape(report) == BLOCKS[key]
    assert report.problems == ()


# --- `-t usages` (§6) ------------------------------------------------------------------------


def test_usages_910b_reads_the_rates_as_ratios_and_ignores_the_prompt(
    samples: dict[str, str],
) -> None:
    report = parse_key_value_output(samples["6#1"])
    chip = report.chip(0, npu_id=0)
    assert chip is not None
    assert list(chip.values) == [
        "DDR Capacity(MB)",
        "DDR Usage Rate(%)",
        "DDR Hugepages Total(page)",
        "DDR Hugepages Usage Rate(%)",
        "HBM Capacity(MB)",
        "HBM Usage Rate(%)",
        "Aicore Usage Rate(%)",
        "Aivector Usage Rate(%)",
        "Aicpu Usage Rate(%)",
        "Ctrlcpu Usage Rate(%)",
        "DDR Bandwidth Usage Rate(%)",
        "HBM Bandwidth Usage Rate(%)",
        "Chip ID",
    ]
    assert chip.values["HBM Usage Rate(%)"] == "4"
    assert chip.value_ratio("HBM Usage Rate(%)") == pytest.approx(0.04)
    assert chip.value_bytes("HBM Capacity(MB)") == 65536 * MIB
    assert chip.value_ratio("Aicore Usage Rate(%)") == 0.0
    header = report.block_with("Chip Count")
    assert header is not None and header.value_integer("Chip Count") == 1
    # Line 1 is the `$ npu-smi info -t usages -i 0` prompt.
    assert [block.first_line for block in report.blocks] == [2, 5]
    assert chip.line_numbers["Chip ID"] == 17


def test_usages_25_5_1_has_its_two_extra_keys(samples: dict[str, str]) -> None:
    chip = parse_key_value_output(samples["6#2"]).chip(0)
    assert chip is not None
    assert chip.value_ratio("Ctrlcpu Usage Rate(%)") == pytest.approx(0.06)
    assert chip.value_ratio("HBM Usage Rate(%)") == pytest.approx(0.05)
    assert list(chip.values)[-3:] == ["NPU Utilization(%)", "Aicube Usage Rate(%)", "Chip ID"]
    assert chip.value_ratio("NPU Utilization(%)") == 0.0


def test_usages_910a_has_ddr_and_no_aivector(samples: dict[str, str]) -> None:
    chip = parse_key_value_output(samples["6#3"]).chip(0)
    assert chip is not None
    assert chip.value_bytes("DDR Capacity(MB)") == 13553 * MIB
    assert chip.value_ratio("DDR Usage Rate(%)") == pytest.approx(0.06)
    assert chip.value_bytes("HBM Capacity(MB)") == 32768 * MIB
    assert "Aivector Usage Rate(%)" not in chip.values
    assert chip.value_ratio("Aivector Usage Rate(%)") is None


def test_usages_310p_has_ddr_only_and_the_dvpp_rates(samples: dict[str, str]) -> None:
    chip = parse_key_value_output(samples["6#4"]).chip(0, npu_id=1)
    assert chip is not None
    assert chip.value_bytes("DDR Capacity(MB)") == 21534 * MIB
    assert chip.value_ratio("Ctrlcpu Usage Rate(%)") == pytest.approx(0.13)
    assert chip.value_ratio("DDR Bandwidth Usage Rate(%)") == pytest.approx(0.51)
    assert chip.value_ratio("Vectorcore Usage Rate(%)") == 0.0
    assert chip.value_ratio("DVPP JPEGD Usage Rate(%)") == 0.0
    assert chip.value_bytes("HBM Capacity(MB)") is None


# --- `-t common`, `-t board`, `-t health`, `-t temp`, `-t power`, `-t ecc` (§7) -------------


def test_common_keeps_the_mcu_temperature_out_of_chip_0(samples: dict[str, str]) -> None:
    report = parse_key_value_output(samples["7.1"])
    (chip,) = report.chips
    assert (chip.npu_id, chip.chip_id) == (1, 0)
    assert chip.value_number("Temperature(C)") == 46.0
    assert chip.value_number("NPU Real-time Power(W)") == pytest.approx(93.4)
    assert chip.value_ratio("HBM Usage Rate(%)") == pytest.approx(0.04)
    assert chip.value_hertz("Aicore Freq(MHZ)") == 1_800_000_000
    assert chip.value_hertz("Aicore curFreq(MHZ)") == 800_000_000
    assert chip.value_integer("Aicore Count") == 24
    mcu = report.blocks[-1]
    assert (mcu.chip_name, mcu.chip_id, mcu.npu_id) == ("mcu", None, 1)
    assert mcu.value_number("Temperature(C)") == 38.0


def test_board_of_an_npu_reads_versions_and_hexadecimal_ids(samples: dict[str, str]) -> None:
    report = parse_key_value_output(samples["7.2#1"])
    (board,) = report.blocks
    assert report.chips == ()
    assert board.value_text("Software Version") == "23.0.5"
    assert board.value_text("Firmware Version") == "7.1.0.7.220"
    assert board.value_integer("Board ID") == 0x02
    assert board.value_integer("PCI Device ID") == 0xD801
    assert board.value_text("PCIe Bus Info") == "0000:61:00.0"
    assert board.values["Class ID"] == "NA"
    assert board.value_text("Class ID") is None


def test_board_of_a_chip_is_one_chip_block(samples: dict[str, str]) -> None:
    report = parse_key_value_output(samples["7.2#2"])
    chip = report.chip(0, npu_id=0)
    assert chip is not None and report.blocks == (chip,)
    assert (chip.value_text("Chip Type"), chip.chip_name) == ("Ascend", "xxx")
    assert chip.value_text("Chip Version") == "V1"
    assert chip.value_text("PCB ID") is None
    assert chip.value_text("VDie ID") == "42C711D4 20B03704 4A10C8D4 14CC040A D2102003"


def test_board_of_a_910b_reads_product_and_serial(samples: dict[str, str]) -> None:
    board = parse_key_value_output(samples["7.2#3"]).block_with("Serial Number")
    assert board is not None
    assert board.value_text("Serial Number") == "1025C9048791"
    assert board.value_text("Product Name") == "IT21HMDC_Bin5"
    assert board.value_text("Model") is None
    assert board.value_text("Software Version") == "25.5.1"
    assert board.value_text("Firmware Version") == "7.8.0.6.201"
    assert board.value_integer("Subsystem Device ID") == 0x3003


def test_health_reads_the_status_and_an_unknown_error_code(samples: dict[str, str]) -> None:
    (health,) = parse_key_value_output(samples["7.3"]).blocks
    assert health.value_text("Health Status") == "OK"
    assert health.value_text("Error Code") is None
    assert health.value_text("Error Information") is None


def test_temp_keeps_the_mcu_sensors_in_their_own_block(samples: dict[str, str]) -> None:
    report = parse_key_value_output(samples["7.4#1"])
    chip = report.chip(0, npu_id=0)
    assert chip is not None
    assert chip.value_number("NPU Temperature (C)") == 39.0
    mcu = report.blocks[-1]
    assert mcu.chip_name == "MCU"
    assert mcu.value_number("LM75A_TE (C)") == 36.0
    assert "LM75A_TE (C)" not in chip.values


def test_power_reads_watts(samples: dict[str, str]) -> None:
    chip = parse_key_value_output(samples["7.4#2"]).chip(0)
    assert chip is not None
    assert chip.value_number("NPU Real-time Power(W)") == pytest.approx(103.5)


def test_ecc_reads_every_count_of_chip_0(samples: dict[str, str]) -> None:
    chip = parse_key_value_output(samples["7.5"]).chip(0, npu_id=1)
    assert chip is not None
    counts = {key: chip.value_integer(key) for key in chip.values if key != "Chip ID"}
    assert len(counts) == 12
    assert set(counts.values()) == {0}
    assert "HBM Double Bit Aggregate Total Err Cnt" in counts


# --- Two chips of one NPU, built from the real one-chip samples -----------------------------


def _key(line: str) -> str:
    return " ".join(line.partition(":")[0].split())


def with_second_chip(sample: str, changes: dict[str, str], *, blank_line: bool = True) -> str:
    """The sample with its chip paragraph repeated as chip 1, `changes` (key → value) applied.

    Without `blank_line`, chip 1 follows chip 0 directly, as if the blank line had been lost.
    """
    lines = [line for line in sample.splitlines() if not line.lstrip().startswith("$")]
    paragraphs: list[list[str]] = [[]]
    for line in lines:
        if line.strip():
            paragraphs[-1].append(line)
        elif paragraphs[-1]:
            paragraphs.append([])
    index = next(i for i, p in enumerate(paragraphs) if any(_key(x) == "Chip ID" for x in p))
    changes = {**changes, "Chip ID": "1"}
    copy = [
        f"{x.partition(':')[0]}: {changes[_key(x)]}" if _key(x) in changes else x
        for x in paragraphs[index]
    ]
    both = paragraphs[index] + ([""] if blank_line else []) + copy
    rebuilt = [*paragraphs[:index], both, *paragraphs[index + 1 :]]
    return "\n\n".join("\n".join(p) for p in rebuilt) + "\n"


TWO_CHIP_CASES = {
    # sample: the key changed in chip 1, its value in chip 0, its value in chip 1 (as read)
    "6#1": ("HBM Usage Rate(%)", 0.04, 0.37),
    "7.1": ("HBM Usage Rate(%)", 0.04, 0.37),
    "7.4#1": ("NPU Temperature (C)", 39.0, 51.0),
    "7.5": ("HBM Single Bit Error Count", 0, 3),
}


def read_as_operators_do(chip: KeyValueBlock, key: str) -> float | None:
    """The key's value through the accessor its unit calls for."""
    if key.endswith("(%)"):
        return chip.value_ratio(key)
    if key.endswith("(C)"):
        return chip.value_number(key)
    return chip.value_integer(key)


@pytest.mark.parametrize("blank_line", [True, False], ids=["blank-line", "run-together"])
@pytest.mark.parametrize("key", sorted(TWO_CHIP_CASES))
def test_a_two_chip_npu_gives_each_chip_its_own_values(
    key: str, blank_line: bool, samples: dict[str, str]
) -> None:
    changed, first_value, second_value = TWO_CHIP_CASES[key]
    raw_second = str(round(second_value * 100)) if changed.endswith("(%)") else str(second_value)
    text = with_second_chip(samples[key], {changed: raw_second}, blank_line=blank_line)
    report = parse_key_value_output(text)
    assert [(chip.npu_id, chip.chip_id) for chip in report.chips] == [
        (report.blocks[0].npu_id, 0),
        (report.blocks[0].npu_id, 1),
    ]
    first, second = report.chips
    assert read_as_operators_do(first, changed) == pytest.approx(first_value)
    assert read_as_operators_do(second, changed) == pytest.approx(second_value)
    assert list(first.values) == list(second.values)
    assert report.problems == ()


def test_a_two_chip_common_output_keeps_the_mcu_after_both_chips(samples: dict[str, str]) -> None:
    text = with_second_chip(samples["7.1"], {"Temperature(C)": "51"}, blank_line=False)
    report = parse_key_value_output(text)
    assert shape(report) == [
        (1, None, None, 2),
        (1, 0, None, 9),
        (1, 1, None, 9),
        (1, None, "mcu", 2),
    ]
    temperatures = [block.value_number("Temperature(C)") for block in report.blocks[1:]]
    assert temperatures == [46.0, 51.0, 38.0]


def test_dash_na_and_empty_values_are_unknown_but_kept_raw() -> None:
    report = parse_key_value_output(
        "        HBM Usage Rate(%)              : NA\n"
        "        Temperature(C)                 : -\n"
        "        Error Code                     :\n"
        "        Chip ID                        : 0\n"
    )
    (chip,) = report.chips
    assert dict(chip.values) == {
        "HBM Usage Rate(%)": "NA",
        "Temperature(C)": "-",
        "Error Code": "",
        "Chip ID": "0",
    }
    assert chip.value_ratio("HBM Usage Rate(%)") is None
    assert chip.value_number("Temperature(C)") is None
    assert chip.value_text("Error Code") is None
    assert report.problems == ()


def test_values_that_are_not_numbers_read_as_none() -> None:
    (block,) = parse_key_value_output(
        "A : nan\nB : 93.4\nC : 0x19E5\nD : 12 MB\nE : -3\nF : 1_000\n"
    ).blocks
    assert block.value_number("A") is None
    assert block.value_integer("B") is None and block.value_number("B") == pytest.approx(93.4)
    assert block.value_integer("C") == 0x19E5
    assert block.value_number("D") is None
    assert block.value_integer("E") == -3
    assert block.value_number("F") is None


def test_a_line_without_a_colon_is_a_problem_and_the_rest_is_read(
    samples: dict[str, str],
) -> None:
    lines = samples["7.4#2"].splitlines()
    lines.insert(3, "        NPU Real-time Power(W)           103.5")
    lines.insert(4, "        : 7")
    text = "\n".join(lines) + "\n"
    report = parse_key_value_output(text)
    assert report.problems == (
        Problem(4, lines[3], "expected 'key : value', found no colon"),
        Problem(5, lines[4], "expected 'key : value', found no key before the colon"),
    )
    chip = report.chip(0)
    assert chip is not None and chip.value_number("NPU Real-time Power(W)") == 103.5


def test_a_repeated_key_in_one_block_is_a_problem_and_the_first_value_stays() -> None:
    text = "Chip ID : 0\nTemperature(C) : 46\nTemperature(C) : 38\n"
    report = parse_key_value_output(text)
    (chip,) = report.chips
    assert chip.value_number("Temperature(C)") == 46.0
    assert [(p.line_number, p.text) for p in report.problems] == [(3, "Temperature(C) : 38")]


def test_an_unreadable_id_is_a_problem_and_an_unknown_one_is_none() -> None:
    text = "NPU ID : 3\n\nChip ID : 0\n\nNPU ID : NA\n\nValue : 1\nChip ID : zero\n"
    report = parse_key_value_output(text)
    # The chip after `NPU ID : NA` belongs to that unknown NPU, not to NPU 3 before it.
    assert [(b.npu_id, b.chip_id) for b in report.blocks] == [
        (3, None),
        (3, 0),
        (None, None),
        (None, None),
    ]
    assert [(p.line_number, p.text) for p in report.problems] == [(8, "Chip ID : zero")]


def test_a_prompt_starts_another_output(samples: dict[str, str]) -> None:
    text = samples["6#1"] + "$ npu-smi info -t usages -i 1\n" + samples["6#4"]
    text += "$ npu-smi info -t health -i 2 -c 0\n" + samples["7.3"]
    report = parse_key_value_output(text)
    assert [(chip.npu_id, chip.chip_id) for chip in report.chips] == [(0, 0), (1, 0)]
    ddr = report.chip(0, npu_id=1)
    assert ddr is not None and ddr.value_bytes("DDR Capacity(MB)") == 21534 * MIB
    # `-t health` prints no NPU ID, and the NPU 1 of the output before it is not its NPU.
    health = report.block_with("Health Status")
    assert health is not None and health.npu_id is None
    assert report.problems == ()


def test_empty_input_gives_empty_results() -> None:
    assert parse_key_value_output("") == KeyValueReport((), ())
    assert parse_key_value_output("\n  \n$ npu-smi info -t usages -i 0\n") == KeyValueReport((), ())
