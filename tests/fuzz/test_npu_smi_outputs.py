"""Whatever `npu-smi` prints (the recorded real outputs of the formats doc, mutated: numbers past
64 bits or past a float, bytes that are not UTF-8, torn rows), its readers keep to their word:
no exception, and a chip row is either read or reported as a problem, never dropped in silence;
and what a reading becomes downstream (records, their documents, the journal, the gauges) takes
any value."""

from __future__ import annotations

import functools

from hypothesis import example, given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest

from npuwatch.journal.block import decode_block, encode_block
from npuwatch.parsers.npu_smi import parse_npu_smi
from npuwatch.parsers.npu_smi_details import parse_key_value_output
from npuwatch.parsers.telemetry import device_records
from npuwatch.sinks.prometheus.device_metrics import DeviceMetrics
from tests.fuzz.budget import fuzz_settings
from tests.fuzz.log_text import MUTATIONS
from tests.fuzz.test_log_lines import read_every_field
from tests.npu_smi_samples import load_detail_samples, load_doc_samples

POLLED_AT_US = 1_757_842_200_000_000


@functools.cache
def tables() -> dict[str, str]:
    return load_doc_samples()


@functools.cache
def details() -> dict[str, str]:
    return load_detail_samples()


@st.composite
def mutated_output(draw: st.DrawFn, samples: dict[str, str]) -> tuple[str, str]:
    """A recorded output, and the same with one of its lines mutated (decoded as the poller
    decodes npu-smi's output: UTF-8, undecodable bytes replaced)."""
    name = draw(st.sampled_from(sorted(samples)))
    lines = samples[name].split("\n")
    at = draw(st.integers(0, len(lines) - 1))
    line = lines[at].encode()
    for _ in range(draw(st.integers(1, 3))):
        line = draw(st.sampled_from(MUTATIONS))(draw, line)
    lines[at] = line.decode("utf-8", "replace")
    return samples[name], "\n".join(lines)


HUGE_HBM = "1" + "0" * 400


def with_aicore(percent: str) -> tuple[str, str]:
    """The first sample, and the same with its first chip's AICore(%) cell set to `percent`."""
    recorded = tables()["1.1"]
    lines = recorded.split("\n")
    row = next(i for i, line in enumerate(lines) if "0000:" in line)
    lines[row] = lines[row].replace("| 0           0", f"| {percent:<11} 0", 1)
    return recorded, "\n".join(lines)


@fuzz_settings(200)
@given(pair=mutated_output(tables()))
@example(pair=with_aicore("-1"))
def test_a_chip_row_of_any_table_is_read_or_reported(pair: tuple[str, str]) -> None:
    recorded, mutated = pair
    before, after = parse_npu_smi(recorded), parse_npu_smi(mutated)
    # One line changed can cost at most the chip its row belongs to, and then it says so.
    assert len(after.chips) + len(after.problems) >= len(before.chips) - len(before.problems)
    registry = CollectorRegistry()
    gauges = DeviceMetrics(registry)
    gauges.update(after)
    generate_latest(registry)
    records = device_records(after, POLLED_AT_US)
    for record in records:
        read_every_field(record)
    if records:
        stored = decode_block(encode_block(records).payload)
        assert [r.original for r in stored] == [r.original for r in records]


@fuzz_settings(200)
@given(pair=mutated_output(details()))
@example(
    pair=(
        "",
        f"NPU ID : 0\nChip ID : 0\nHBM Capacity(MB) : {HUGE_HBM}\nAicore Freq(MHZ) : {HUGE_HBM}\n",
    )
)
def test_every_value_of_any_detail_output_reads_as_a_number_or_none(pair: tuple[str, str]) -> None:
    report = parse_key_value_output(pair[1])
    for block in report.blocks:
        for key in block.values:
            block.value_text(key)
            block.value_integer(key)
            block.value_ratio(key)
            block.value_bytes(key)
            block.value_hertz(key)
