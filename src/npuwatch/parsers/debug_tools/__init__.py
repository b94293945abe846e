"""What Ascend's debugging tools write, read into plain records: one module per tool and kind.

Precision compare (msprobe / ptdbg / msit), one module per kind of result:
- `compare_table`: compare_result_*.xlsx|csv and debug_compare_result_* (tensor, summary, md5);
- `compare_json`: the first-mismatch compare_result_rank{N}_*.json and diff_analyze_*.json;
- `compare_merge`: multi_ranks_compare_merge_*.xlsx;
- `msit_result`: msit offline result_*.csv;
- `compare_rows`: what they all return (CompareTable, CompareRow, metric keys, rank of a file);
- `cell_values`: placeholder cells, numbers, texts and verdicts (also used by acc_check);
- `table_files`: the rows of a .csv or .xlsx with their numbers (used by every table reader).

The other tools:
- `acc_check`: the API accuracy checker's accuracy_checking_result/details CSVs;
- `overflow`: msprobe overflow_check's anomaly_analyze_*.json;
- `monitor`: msprobe monitor's statistics CSVs and anomaly_detected/*.json;
- `sanitizer`: msSanitizer's text reports (the loop that assembles records), with
  `sanitizer_grammar` (what each report line says), `sanitizer_records` (the records and the
  draft they are built from) and `sanitizer_events` (a record in one line, as a log event);
- `msaicerr`: msaicerr's info_* folders;
- `opprof`: msOpProf's OPPROF_* folders (launches and layout), with `opprof_metrics` (on-board
  metric CSVs, OpBasicInfo), `opprof_simulator` (simulator hotspots) and `opprof_files` (the
  CSV reading both share);
- `entries`: the log entries the agent journals from these outputs.

Each parser is a pure function of a path's bytes: it never raises on a damaged file, and says
what it could not read as problems that name the file and the row or line
(npuwatch.parsers.problem_list). pandas and python-calamine (.xlsx) are imported by the
readers that use them, never with this package.
"""
