"""Precision result files read into rows, one module per kind of file.

- `compare_table`: compare_result_*.xlsx|csv and debug_compare_result_* (tensor, summary, md5);
- `compare_json`: the first-mismatch compare_result_rank{N}_*.json and diff_analyze_*.json;
- `compare_merge`: multi_ranks_compare_merge_*.xlsx;
- `msit_result`: msit offline result_*.csv;
- `compare_rows`: what they all return (CompareTable, CompareRow, metric keys, rank of a file);
- `acc_check`: the API accuracy checker's accuracy_checking_result/details CSVs;
- `overflow`: msprobe overflow_check's anomaly_analyze_*.json.

Each is a pure function of a path's bytes: it never raises on a damaged file, and says what it
could not read as problems that name the file and the row or line.
"""
