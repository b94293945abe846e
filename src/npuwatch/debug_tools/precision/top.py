"""The top-N tensors of one compare result by each metric it carries.

For every metric of TOP_METRICS a table carries, its N worst tensors: the lowest cosine or
thousandth ratio, the highest errors (|value| for the statistics' differences), the earlier
tensor first among equal values. Kept apart from the operators' verdicts and the layer
bisection: it ranks tensors, not operators.
"""

from __future__ import annotations

from dataclasses import dataclass

from npuwatch.debug_tools.precision.read.compare_rows import CompareRow

TOP_METRICS: tuple[tuple[str, str, bool], ...] = (
    # key, title, whether the lowest values are the worst
    ("cosine", "lowest Cosine", True),
    ("max_abs_err", "highest MaxAbsErr", False),
    ("max_rel_err", "highest MaxRelativeErr", False),
    ("one_thousandth_ratio", "lowest One Thousandth Err Ratio", True),
    ("five_thousandths_ratio", "lowest Five Thousandths Err Ratio", True),
    ("max_diff", "highest |Max diff|", False),
    ("norm_diff", "highest |L2norm diff|", False),
    ("max_rel_diff", "highest MaxRelativeErr (statistics)", False),
    ("mean_rel_diff", "highest MeanRelativeErr (statistics)", False),
    ("rel_euc_dist", "highest RelativeEuclideanDistance", False),
    ("kl_divergence", "highest KullbackLeiblerDivergence", False),
    ("mean_rel_err", "highest MeanRelativeError", False),
)


@dataclass(frozen=True)
class RankedTensor:
    name: str
    value: float
    verdict: str


@dataclass(frozen=True)
class TopList:
    metric: str
    title: str
    tensors: list[RankedTensor]


def top_lists(rows: list[CompareRow], verdicts: list[str], top: int) -> list[TopList]:
    """The `top` worst tensors by each metric of TOP_METRICS that `rows` carry."""
    lists = []
    for key, title, lowest in TOP_METRICS:
        carried = [
            (abs(row.metrics[key]) if key.endswith("_diff") else row.metrics[key], position)
            for position, row in enumerate(rows)
            if key in row.metrics
        ]
        if not carried:
            continue
        # Stable order: the earlier tensor first among equal values.
        carried.sort(key=lambda item: (item[0] if lowest else -item[0], item[1]))
        lists.append(
            TopList(
                key,
                title,
                [RankedTensor(rows[p].name, value, verdicts[p]) for value, p in carried[:top]],
            )
        )
    return lists
