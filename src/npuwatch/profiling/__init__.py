"""Profiling: where the device time of a job goes, and whether it got slower.

- `msprof/`: msprof (`PROF_*`) and torch_npu (`*_ascend_pt`) outputs read into DataFrames;
- `opprof/`: msOpProf's `OPPROF_*` folders, read and summarised per operator launch;
- `baseline/`: the archive of past operator tables and the regression gate;
- `summary`, `steps`, `text`, `plot`: `npuwatch profile summary` of msprof and torch_npu runs
  (operators, cores, copies, step time per rank and the slow-rank check).
"""
