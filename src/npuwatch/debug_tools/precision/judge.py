"""Whether a compared tensor is accurate enough: the file's verdict, or the thresholds.

By default the verdict of the file is taken (`Result` pass/warning/error, `Accuracy Reached or
Not` Yes/No, msit's `IsPrecisionError`); a tensor without one, or every tensor when the user
gives a threshold (`--cosine`, `--atol`, `--rtol`, `--thousandth`), is judged from its metrics
where the file carries them. Defaults are msprobe's constants (formats doc §1.2): cosine ≥ 0.99,
MaxAbsErr ≤ 0.001, MaxRelativeErr ≤ 0.001, One Thousandth Err Ratio ≥ 0.999. A tensor fails
when its cosine or thousandth ratio is below the threshold, or when its error is too large both
absolutely and relatively (MaxAbsErr > atol and MaxRelativeErr > rtol, as numpy.isclose: a
large relative error on tiny values, or a small one on large values, passes). msit results use
msit's thresholds (§6): CosineSimilarity ≥ cosine, RelativeEuclideanDistance < 0.05,
KullbackLeiblerDivergence < 0.005, RootMeanSquareError < 1, MeanRelativeError < 1. Summary-mode
and md5 metrics have no tolerance to judge by: their tensors keep the file's verdict.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from npuwatch.debug_tools.precision.read.compare_rows import CompareRow

VERDICT_ORDER = ("error", "warning", "pass", "unmatched", "unjudged")
"""Worst first: an operator's verdict is its worst tensor's."""
MSIT_LIMITS = {"rel_euc_dist": 0.05, "kl_divergence": 0.005, "rmse": 1.0, "mean_rel_err": 1.0}
_JUDGED_METRICS = ("cosine", "max_abs_err", "one_thousandth_ratio")


@dataclass(frozen=True)
class Thresholds:
    """The tolerances, and whether the user asked to re-judge every tensor with them."""

    cosine: float = 0.99
    atol: float = 0.001
    rtol: float = 0.001
    thousandth: float = 0.999
    rejudge: bool = False


def judge(row: CompareRow, kind: str, thresholds: Thresholds) -> tuple[str, str]:
    """The row's verdict and what it came from (`file`, `thresholds` or `none`)."""
    if thresholds.rejudge or row.verdict is None:
        verdict = judge_metrics(row.metrics, kind, thresholds)
        if verdict is not None:
            return verdict, "thresholds"
    if row.verdict is not None:
        return row.verdict, "file"
    return "unjudged", "none"


def judge_metrics(metrics: Mapping[str, float], kind: str, thresholds: Thresholds) -> str | None:
    """`pass` or `error` from the metrics; None when none of them can be judged."""
    if kind == "msit":
        judged = [key for key in ("cosine", *MSIT_LIMITS) if key in metrics]
        if not judged:
            return None
        failed = metrics.get("cosine", 1.0) < thresholds.cosine or any(
            metrics[key] >= limit for key, limit in MSIT_LIMITS.items() if key in metrics
        )
        return "error" if failed else "pass"
    if kind in {"summary", "md5", "merge"} or not any(k in metrics for k in _JUDGED_METRICS):
        return None
    too_far = metrics.get("max_abs_err", 0.0) > thresholds.atol and (
        metrics.get("max_rel_err", float("inf")) > thresholds.rtol
    )
    failed = (
        metrics.get("cosine", 1.0) < thresholds.cosine
        or metrics.get("one_thousandth_ratio", 1.0) < thresholds.thousandth
        or too_far
    )
    return "error" if failed else "pass"


def worst(verdicts: list[str]) -> str:
    return min(verdicts, key=VERDICT_ORDER.index, default="unjudged")
