"""What every precision compare reader returns: tables of compared tensors, one per rank.

The msprobe tables, the first-mismatch and diff_analyze JSON, the multi-rank merge workbooks
and msit's offline results are different files saying the same thing, so they share these
records (`CompareTable` of `CompareRow`s), the canonical metric keys their column names map to,
and the rule that finds the rank in a file name; each reader is a module of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

# Canonical metric keys: what each header names, by compare mode.
TENSOR_METRICS = {
    "Cosine": "cosine",
    "EucDist": "euc_dist",
    "MaxAbsErr": "max_abs_err",
    "MaxRelativeErr": "max_rel_err",
    "One Thousandth Err Ratio": "one_thousandth_ratio",
    "Five Thousandths Err Ratio": "five_thousandths_ratio",
    "Five Thousandth Err Ratio": "five_thousandths_ratio",  # the user doc's spelling
}
SUMMARY_METRICS = {
    "Max diff": "max_diff",
    "Min diff": "min_diff",
    "Mean diff": "mean_diff",
    "L2norm diff": "norm_diff",
    # Relative differences of the statistics, written in %; kept as fractions.
    "MaxRelativeErr": "max_rel_diff",
    "MinRelativeErr": "min_rel_diff",
    "MeanRelativeErr": "mean_rel_diff",
    "NormRelativeErr": "norm_rel_diff",
}
MSIT_METRICS = {
    "CosineSimilarity": "cosine",
    "MaxAbsoluteError": "max_abs_err",
    "AccumulatedRelativeError": "accumulated_rel_err",
    "RelativeEuclideanDistance": "rel_euc_dist",
    "KullbackLeiblerDivergence": "kl_divergence",
    "MeanAbsoluteError": "mean_abs_err",
    "RootMeanSquareError": "rmse",
    "MaxRelativeError": "max_rel_err",
    "MeanRelativeError": "mean_rel_err",
}

_RANK_IN_NAME = re.compile(r"rank_?(\d+)", re.IGNORECASE)


@dataclass(frozen=True)
class CompareRow:
    """One compared tensor: its names, metrics (only real numbers), the file's verdict."""

    name: str
    line: int
    """Row number in the file (1 = the header), or the entry's position in a JSON file."""
    metrics: dict[str, float] = field(default_factory=dict)
    verdict: str | None = None
    """`pass`, `warning`, `error` or `unmatched` as the file says it; None when it says none."""
    bench_name: str | None = None
    message: str | None = None


@dataclass(frozen=True)
class CompareTable:
    """One compare result of one rank, rows in execution order."""

    source: str
    kind: str
    """`tensor`, `summary`, `md5`, `first_mismatch`, `diff_analyze`, `msit` or `merge`."""
    rank: int
    rows: list[CompareRow]
    problems: list[str] = field(default_factory=list)
    verdict_column: str | None = None
    """The column the verdicts came from (`Result`, `Accuracy Reached or Not`,
    `IsPrecisionError`), None when the file has none."""


def rank_of(path: Path) -> int:
    """The rank named in the file name (`rank3`, `rank_3`), else 0."""
    found = _RANK_IN_NAME.search(path.name)
    return int(found.group(1)) if found else 0
