"""Reading a large msprobe compare result: `npuwatch precision summary` against pandas.

    python bench/precision_bench.py [--rows 50000] [--work /tmp/npuwatch-precision-bench]

Writes one rank's compare result of `--rows` tensors (the fixture's rank-0 rows, the model
repeated with renumbered operators, N/A and inf cells included) as a CSV and as the .xlsx
msprobe writes by default, then times, each in a fresh interpreter:

- reference: `pandas.read_csv` of the CSV, and `pandas.read_excel` of the .xlsx with the same
  reader npuwatch uses (python-calamine), otherwise their defaults (the floor: no verdicts, no
  layers, no problem reporting);
- npuwatch: finding and reading the file (`read_precision_inputs`) and the whole summary
  (`summarise_precision`: verdicts, first failure, the layer where the error grows, top-N).

Prints rows/s, CPU time and peak RSS of each, and npuwatch's time against the reference's.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fixtures.debug_tools.make_precision import LAYERS, TENSOR_HEADER, rank_rows

_MEASURE = """
import json, resource, sys, time
from pathlib import Path
started, cpu = time.perf_counter(), time.process_time()
path = Path(sys.argv[2])
if sys.argv[1] == "reference":
    import pandas
    if path.suffix == ".xlsx":
        table = pandas.read_excel(path, engine="calamine")
    else:
        table = pandas.read_csv(path)
    rows = len(table)
else:
    from npuwatch.debug_tools.precision.files import read_precision_inputs
    from npuwatch.debug_tools.precision.judge import Thresholds
    from npuwatch.debug_tools.precision.summary import summarise_precision
    summary = summarise_precision(read_precision_inputs(path), Thresholds(), top=10)
    rows = sum(sum(comparison.counts.values()) for comparison in summary.comparisons)
print(json.dumps({
    "rows": rows,
    "seconds": time.perf_counter() - started,
    "cpu": time.process_time() - cpu,
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=50_000, help="tensors in the result")
    parser.add_argument("--work", type=Path, help="folder for the files (default: a temp one)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="npuwatch-precision-bench-"))
    try:
        csv_path, xlsx_path = _write_results(work, args.rows)
        for path in (csv_path, xlsx_path):
            reference = _measure("reference", path)
            npuwatch = _measure("npuwatch", path)
            _report(path, reference, npuwatch)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


def _write_results(work: Path, rows: int) -> tuple[Path, Path]:
    """The same `rows` tensors as a CSV and as an .xlsx (written once, kept in --work)."""
    import csv

    from openpyxl import Workbook

    work.mkdir(parents=True, exist_ok=True)
    csv_path = work / f"compare_result_rank0_{rows}.csv"
    xlsx_path = work / f"compare_result_rank0_{rows}.xlsx"
    if csv_path.exists() and xlsx_path.exists():
        return csv_path, xlsx_path
    model = rank_rows(0)
    table = []
    for index in range(rows):
        row = list(model[index % len(model)])
        # Each pass over the model is a deeper copy of it: later layers, later calls.
        row[0] = row[1] = _renumbered(str(row[0]), index // len(model))
        table.append(row)
    with csv_path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(TENSOR_HEADER)
        writer.writerows(table)
    book = Workbook(write_only=True)
    sheet = book.create_sheet("Sheet")
    sheet.append(TENSOR_HEADER)
    for row in table:
        sheet.append(row)
    book.save(xlsx_path)
    return csv_path, xlsx_path


def _renumbered(name: str, copy: int) -> str:
    """`name` in the `copy`-th repetition of the model: its layer and call numbers moved on."""
    name = re.sub(r"layers\.(\d+)", lambda m: f"layers.{int(m[1]) + copy * LAYERS}", name)
    return re.sub(
        r"\.(\d+)\.(forward|backward)", lambda m: f".{int(m[1]) + copy * 1000}.{m[2]}", name
    )


def _measure(which: str, path: Path) -> dict[str, float]:
    result = subprocess.run(
        [sys.executable, "-c", _MEASURE, which, str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, float] = json.loads(result.stdout.strip().splitlines()[-1])
    return figures


def _report(path: Path, reference: dict[str, float], npuwatch: dict[str, float]) -> None:
    reader = "pandas.read_excel" if path.suffix == ".xlsx" else "pandas.read_csv"
    size_mb = path.stat().st_size / 1e6
    print(f"{path.name} ({size_mb:.1f} MB, {int(reference['rows']):,} rows)")
    for name, figures in ((reader, reference), ("npuwatch precision summary", npuwatch)):
        print(
            f"  {name:28} {figures['seconds']:6.2f} s  CPU {figures['cpu']:6.2f} s  "
            f"{figures['rows'] / figures['seconds']:10,.0f} rows/s  RSS {figures['rss_mb']:5.0f} MB"
        )
    print(f"  npuwatch / reference: {npuwatch['seconds'] / reference['seconds']:.2f}×")


if __name__ == "__main__":
    main()
