"""msOpProf's OPPROF_* folders read into launches: every layout, the header variants of each
chip and CANN version, NA/N/A cells, and damaged files as problems, never exceptions."""

from __future__ import annotations

from pathlib import Path

from fixtures.debug_tools.make_opprof import write_opprof

from npuwatch.profiling.opprof.read import (
    DEVICES,
    LAUNCHES,
    SINGLE,
    is_opprof_folder,
    load_opprof,
    read_opprof_run,
)
from tests.conftest import FIXTURES

OPPROF = FIXTURES / "debug_tools" / "opprof"
MEMORY_BOUND = OPPROF / "OPPROF_20250302093000_MEMBOUNDVECTORAB"
MIX = OPPROF / "OPPROF_20250302094500_COMPUTEBOUNDMIXC"
P310 = OPPROF / "OPPROF_20240603022812_INFERENCEPRODUCT"
DEVICES_RUN = OPPROF / "OPPROF_20260605170714_RYQFPTCBYWBFCNBI"
SIMULATOR = OPPROF / "OPPROF_20250302100000_SIMULATORRUNABCD"
DAMAGED = OPPROF / "OPPROF_20250302101500_DAMAGEDCSVFILESX"


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_the_generator_rewrites_the_committed_fixtures_byte_for_byte(tmp_path: Path) -> None:
    assert _files(write_opprof(tmp_path)) == _files(OPPROF)


def test_a_parent_folder_holds_every_opprof_run_in_name_order() -> None:
    assert is_opprof_folder(OPPROF) and is_opprof_folder(MIX)
    assert not is_opprof_folder(FIXTURES / "profiling")
    names = [run.source.name for run in load_opprof(OPPROF)]
    assert len(names) == 6 and names == sorted(names)


def test_a_flattened_launch_reads_the_852_headers_by_name_with_na_cells_left_out() -> None:
    run = read_opprof_run(MEMORY_BOUND)
    assert run.layout == SINGLE and run.problems == ()
    (launch,) = run.launches
    assert launch.folder == "." and launch.launch is None and launch.device_id == 0
    assert launch.basic.op_name == "add_rms_norm_custom" and launch.basic.op_type == "vector"
    assert launch.basic.duration_us == 24.86 and launch.basic.mix_block_dim is None
    assert launch.basic.soc_version == "Ascend910B2"  # from dump/op_basic_info.txt
    assert sorted(launch.metrics) == [
        "ArithmeticUtilization", "L2Cache", "Memory", "MemoryL0", "MemoryUB",
        "PipeUtilization", "ResourceConflictRatio",
    ]  # fmt: skip
    pipe = launch.metrics["PipeUtilization"]
    assert pipe.columns[-1] == "aic_mte2_active_bw(GB/s)"  # the trailing comma is no column
    assert [(row.block_id, row.sub_block) for row in pipe.rows] == [
        (0, "vector0"), (1, "vector0"), (2, "vector0"), (3, "vector0"),
    ]  # fmt: skip
    first = pipe.rows[0].values
    assert first["aiv_mte2_ratio"] == 0.781 and first["aiv_total_cycles"] == 38524
    assert "aic_time(us)" not in first  # NA
    assert "aiv_mte1_wait_ratio" in launch.metrics["ResourceConflictRatio"].columns


def test_several_launches_keep_their_number_and_the_head_pipe_columns() -> None:
    run = read_opprof_run(MIX)
    assert run.layout == LAUNCHES and run.problems == ()
    assert [(launch.op_name, launch.launch) for launch in run.launches] == [
        ("add_custom", 0), ("matmul_mix_aic", 0), ("matmul_mix_aic", 1), ("matmul_mix_aic", 2),
    ]  # fmt: skip
    basic_only, mix = run.launches[0], run.launches[1]
    assert basic_only.metrics == {} and basic_only.basic.block_dim == 8
    assert mix.basic.mix_block_dim == 4 and mix.device_id == 1
    rows = mix.metrics["PipeUtilization"].rows
    assert [row.sub_block for row in rows[:3]] == ["cube0", "vector0", "vector1"]
    assert rows[0].values["aic_scalar_wait_id15_time(us)"] == 0.0
    assert rows[1].values["aiv_scalar_wait_id0_time(us)"] == 7.144
    assert rows[0].values["aic_mte2_active_bw(GB/s)"] == 287.700219
    assert "aiv_mte1_wait_ratio" not in mix.metrics["ResourceConflictRatio"].columns


def test_310p_rows_have_no_block_and_na_written_the_old_way() -> None:
    (launch,) = read_opprof_run(P310).launches
    row = launch.metrics["PipeUtilization"].rows[0]
    assert row.block_id is None and row.sub_block is None
    assert row.values["aic_vec_ratio"] == 0.713 and "aic_mte1_ratio" not in row.values  # N/A
    assert launch.basic.mix_block_dim is None and launch.basic.op_type == "AiCore"
    assert (launch.basic.current_freq_mhz, launch.basic.rated_freq_mhz) == (800.0, 1800.0)
    assert launch.metrics["L2Cache"].rows[0].values == {"aic_l2_cache_hit_rate(%)": 99.968201}


def test_several_devices_name_the_device_from_the_folder_with_a5_headers() -> None:
    run = read_opprof_run(DEVICES_RUN)
    assert run.layout == DEVICES and run.problems == ()
    assert [(launch.device_id, launch.launch) for launch in run.launches] == [(0, 0), (1, 0)]
    launch = run.launches[1]
    assert launch.basic.soc_version == "Ascend950PR_9589"
    assert "aic_read_far_victim" in launch.metrics["L2Cache"].columns
    assert "aiv_ub_read_bw_gm(GB/s)" in launch.metrics["MemoryUB"].columns


def test_a_simulator_run_has_hotspots_per_core_with_quoted_details() -> None:
    (launch,) = read_opprof_run(SIMULATOR).launches
    assert launch.op_name == "" and launch.metrics == {}
    assert [core.core for core in launch.cores] == ["core0.veccore0", "core1.veccore0"]
    code = launch.cores[0].code_lines[0]
    assert code.code.endswith("add_custom.cpp:58") and code.cycles == 62388
    instructions = launch.cores[0].instructions
    assert [item.instr for item in instructions][:2] == ["MOV_OUT_TO_UB", "VADD"]
    assert instructions[-1].detail == "PIPE:MTE2,TRIGGERPIPE:SCALAR,FLAGID:0,"
    assert instructions[0].addr == "288400124" and instructions[0].pipe == "MTE2"


def test_damaged_files_are_problems_that_name_file_and_line() -> None:
    run = read_opprof_run(DAMAGED)
    (launch,) = run.launches
    where = str(DAMAGED)
    assert list(run.problems) == [
        f"{where}/Memory.csv:1: empty file",
        f"{where}/PipeUtilization.csv:4: 6 fields where the header has 34; skipped",
        f"{where}/PipeUtilization.csv:3: aiv_scalar_ratio 'n/a?' is not a number; left empty",
        f"{where}/PipeUtilization.csv:5: block_id 'x' is not a whole number; row skipped",
        f"{where}/dump/op_basic_info.txt:2: no Key=Value; line skipped",
        f"{where}/trace.json:5: not whole JSON (Unterminated string starting at, column 57); "
        "read the 3 events before it",
        f"{where}/trace.json: AIV BLOCK1 on core1.veccore0: START without its END; "
        "block not counted",
        f"{where}/visualize_data.bin: block 2 at byte 84 (Trace): contentSize 1099511627776 "
        "exceeds the 16 bytes left in the file; rest of the file skipped",
    ]
    assert [row.block_id for row in launch.metrics["PipeUtilization"].rows] == [0, 1]
    assert launch.metrics["Memory"].rows == ()


def test_unreadable_bytes_and_a_misnamed_folder_do_not_raise(tmp_path: Path) -> None:
    folder = tmp_path / "OPPROF_bad"
    folder.mkdir()
    (folder / "OpBasicInfo.csv").write_bytes(b"Op Name,Task Duration(us),\n\xff\xfe,abc,\n")
    run = read_opprof_run(folder)
    assert run.launches[0].basic.duration_us is None
    assert run.problems[0].endswith("not named OPPROF_<YYYYmmddHHMMSS>_<16 letters>; read anyway")
    assert (
        run.problems[1]
        == f"{folder}/OpBasicInfo.csv:2: Task Duration(us) 'abc' is not a number; left empty"
    )
