"""The profiling fixtures: rewritten identically by their generator, small, and the slowdown
helper that regression tests build on."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.profiling.make_profiles import (
    write_msprof_run,
    write_old_msprof_run,
    write_torch_run,
)

from npuwatch.profiling.msprof.operators import operator_table
from npuwatch.profiling.msprof.run import load_profile
from tests.conftest import FIXTURES

PROFILING = FIXTURES / "profiling"


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


@pytest.mark.parametrize("rank", [0, 1])
def test_the_generator_rewrites_each_committed_torch_run_byte_for_byte(
    tmp_path: Path, rank: int
) -> None:
    written = write_torch_run(tmp_path, rank=rank)
    committed = PROFILING / "torch_2rank" / written.name
    assert _files(written) == _files(committed)


def test_the_generator_rewrites_the_committed_msprof_runs_byte_for_byte(tmp_path: Path) -> None:
    current = write_msprof_run(tmp_path / "msprof")
    old = write_old_msprof_run(tmp_path / "msprof_old")
    assert _files(current) == _files(PROFILING / "msprof" / current.name)
    assert _files(old) == _files(PROFILING / "msprof_old" / old.name)


def test_the_fixtures_stay_small() -> None:
    size = sum(len(content) for content in _files(PROFILING).values())
    assert size < 300_000


def test_a_slowdown_makes_the_named_op_type_that_much_slower_and_nothing_else(
    tmp_path: Path,
) -> None:
    base_run = load_profile(write_torch_run(tmp_path / "base", rank=0))
    slow_run = load_profile(write_torch_run(tmp_path / "slow", rank=0, slowdown={"MatMulV2": 1.2}))
    base, slow = operator_table(base_run), operator_table(slow_run)
    key = ["op_name", "op_type", "task_type"]
    ratio = (slow.set_index(key)["total_us"] / base.set_index(key)["total_us"]).round(3)
    matmul = ("aclnnMatmul_MatMulCommon_MatMulV2", "MatMulV2", "AI_CORE")
    assert ratio[matmul] == pytest.approx(1.2, abs=0.001)
    assert set(ratio.drop(matmul)) == {1.0}
    # Step times are sums of the kernels, so they grow by the added MatMulV2 time.
    added = 0.2 * base.set_index(key)["total_us"][matmul]
    grown = slow_run.step_trace["computing_us"].sum() - base_run.step_trace["computing_us"].sum()
    assert grown == pytest.approx(added, abs=0.05)
    assert slow_run.step_trace["free_us"].sum() == pytest.approx(
        base_run.step_trace["free_us"].sum(),
        abs=2.0,  # float64 timestamps: 0.25 µs steps
    )


def test_a_slowdown_by_kernel_name_touches_only_that_kernel(tmp_path: Path) -> None:
    name = "aclnnSwiGlu_SwiGlu_SwiGlu"
    base = operator_table(load_profile(write_torch_run(tmp_path / "base", rank=1)))
    slow = operator_table(
        load_profile(write_torch_run(tmp_path / "slow", rank=1, slowdown={name: 2.0}))
    )
    total = {row.op_name: row.total_us for row in slow.itertuples()}
    before = {row.op_name: row.total_us for row in base.itertuples()}
    assert total[name] == pytest.approx(2 * before[name], abs=0.01)
    assert (
        total["aclnnSwiGluGrad_SwiGluGrad_SwiGluGrad"]
        == before["aclnnSwiGluGrad_SwiGluGrad_SwiGluGrad"]
    )
