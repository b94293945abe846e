"""Ascend's debugging tools, read and summarised: one package per tool a user names.

- `precision/`: msprobe / ptdbg / msit precision compare, the overflow check, the API accuracy
  checker (`npuwatch precision summary`);
- `monitor/`: msprobe's training monitor (`npuwatch monitor summary`);
- `sanitizer/`: msSanitizer reports and msaicerr outputs (`npuwatch sanitizer summary`);
- what they share: `table_files` (the rows of a .csv or .xlsx with their numbers),
  `cell_values` (placeholder cells, numbers, texts, verdicts), `findings` (an output's findings
  as journal entries and the metrics' figures), `entries` (those entries as records).

msOpProf, a profiler, is under `npuwatch.profiling.opprof`. The readers (`*/read*`) are pure
functions of a path's bytes, like `npuwatch.parsers`: they never raise on a damaged file, and
say what they could not read as problems that name the file and the row or line
(npuwatch.parsers.problem_list). pandas and python-calamine (.xlsx) are imported by the
readers that use them, never with these packages.
"""
