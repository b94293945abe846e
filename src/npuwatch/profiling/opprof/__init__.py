"""msOpProf's `OPPROF_*` folders: `npuwatch profile summary OPPROF_…` and the baseline figures.

- `read` (the launches of a folder and its layout), with `read_metrics` (on-board metric CSVs,
  OpBasicInfo), `read_simulator` (simulator hotspots), `read_files` (the CSV reading both share),
  `read_trace` (trace.json), `read_visualize` (visualize_data.bin) and `read_comm` (the HCCL
  tasks of MC2/LCCL operators): pure functions of a folder's bytes, never raising on a damaged
  file;
- `figures`: each launch's key figures and its bound; `trace_summary`: what trace.json and
  visualize_data.bin add; `summary`: launches and the operator table; `text`, `plot`.
"""
