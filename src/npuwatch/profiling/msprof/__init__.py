"""Profiling output of msprof (`PROF_*`) and torch_npu (`*_ascend_pt`), read into DataFrames.

    from npuwatch.profiling.msprof.operators import operator_table
    from npuwatch.profiling.msprof.run import load_profiles
    for run in load_profiles(Path("/data/job42/prof")):   # one ProfileRun per rank or device
        print(run.label, operator_table(run).head(10), run.problems)

- `layout`: where a run keeps its files, `find_profile_runs`, `is_run_complete` (no pandas);
- `metadata`: rank and CANN/torch_npu versions from profiler_info*.json (no pandas);
- `columns`: the canonical column names; `tables`: the CSV reader every table kind shares;
- one parser per kind: `kernels` (op_summary, kernel_details), `statistics` (op_statistic,
  api_statistic, communication_statistic), `steps`, `communication`, `trace`, `memory`,
  `task_time`, `operator_details` — pure functions of bytes, returning rows and problems;
- `run`: `ProfileRun`, `load_profile`, `load_profiles`; `operators`: `operator_table`.

`layout` and `metadata` import no pandas, so that the agent can watch for runs without paying
for it; the parsers and the loader do.
"""
