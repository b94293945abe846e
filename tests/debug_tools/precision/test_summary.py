"""The precision summary names the first failing operator and the layer where the error grows."""

from __future__ import annotations

import pytest

from npuwatch.debug_tools.precision.files import read_precision_inputs
from npuwatch.debug_tools.precision.judge import Thresholds
from npuwatch.debug_tools.precision.names import split_name
from npuwatch.debug_tools.precision.summary import PrecisionSummary, summarise_precision
from tests.conftest import FIXTURES

PRECISION = FIXTURES / "debug_tools" / "precision"


def _four_ranks(thresholds: Thresholds | None = None) -> PrecisionSummary:
    inputs = read_precision_inputs(PRECISION / "compare_4rank")
    return summarise_precision(inputs, thresholds or Thresholds(), top=3)


@pytest.mark.parametrize(
    ("name", "operator", "tensor", "direction", "layer"),
    [
        ("Module.layers.3.mlp.Linear.forward.0.output.0", "Module.layers.3.mlp.Linear.forward.0", "output.0", "forward", "layers.3"),
        ("Tensor.add.12.forward", "Tensor.add.12.forward", None, "forward", None),
        ("Torch.matmul.3.forward.output.0", "Torch.matmul.3.forward", "output.0", "forward", None),
        ("Module.module.language_model.encoder.layers.0.mlp.ParallelMLP.backward.0.input.0", "Module.module.language_model.encoder.layers.0.mlp.ParallelMLP.backward.0", "input.0", "backward", "language_model.encoder.layers.0"),
        ("Module.layers.2.feed_forward.w1.Linear.forward.0.output.0", "Module.layers.2.feed_forward.w1.Linear.forward.0", "output.0", "forward", "layers.2"),
        ("Module.embedding.Embedding.forward.0.input.0", "Module.embedding.Embedding.forward.0", "input.0", "forward", "embedding"),
        ("Functional_linear_0_forward_output", "Functional_linear_0_forward", "output", "forward", None),
        ("Sub_26Mul_28", "Sub_26Mul_28", None, None, None),
    ],
)  # fmt: skip
def test_names_split_into_operator_tensor_direction_and_layer(
    name: str, operator: str, tensor: str | None, direction: str | None, layer: str | None
) -> None:
    split = split_name(name)
    assert (split.operator, split.tensor, split.direction, split.module_layer) == (
        operator, tensor, direction, layer,
    )  # fmt: skip


def test_each_rank_names_its_first_failing_operator() -> None:
    summary = _four_ranks()
    firsts = [
        (c.rank, c.first_failure.operator if c.first_failure else None) for c in summary.comparisons
    ]
    assert firsts == [
        (0, "NPU.npu_fusion_attention.5.forward"),
        (1, "Torch.matmul.10.forward"),
        (2, "Tensor.add.2.forward"),
        (3, "NPU.npu_fusion_attention.5.forward"),
    ]


def test_the_error_grows_from_layers_5_forward_on_every_rank_despite_a_transient_failure() -> None:
    summary = _four_ranks()
    starts = {
        (c.error_start.layer, c.error_start.direction, c.error_start.persistent)
        for c in summary.comparisons
        if c.error_start
    }
    assert starts == {("layers.5", "forward", True)}
    assert len(summary.comparisons) == 4
    rank2 = summary.comparisons[2]
    assert rank2.first_failure is not None and rank2.first_failure.layer == "layers.2"
    assert (
        rank2.error_start is not None
        and rank2.error_start.first_failing_operator == "NPU.npu_fusion_attention.5.forward"
    )


def test_operators_keep_execution_order_and_get_the_worst_verdict_of_their_tensors() -> None:
    rank0 = _four_ranks().comparisons[0]
    assert [op.index for op in rank0.operators] == list(range(1, 69))
    assert rank0.operators[0].operator == "Module.embedding.Embedding.forward.0"
    assert rank0.operators[0].verdict == "pass"  # input and output tensors, both pass
    assert rank0.counts == {"pass": 38, "warning": 1, "error": 28, "unmatched": 1, "unjudged": 0}


def test_an_atol_override_rejudges_the_warning_into_the_first_failure() -> None:
    rank0 = _four_ranks(Thresholds(atol=0.0005, rejudge=True)).comparisons[0]
    assert rank0.judged_by == "file and thresholds"  # the unmatched tensor keeps its verdict
    assert (
        rank0.first_failure is not None and rank0.first_failure.operator == "Torch.matmul.7.forward"
    )
    assert rank0.error_start is not None and rank0.error_start.layer == "layers.5"


def test_top_lists_are_worst_first_and_limited_to_top() -> None:
    rank1 = _four_ranks().comparisons[1]
    by_metric = {listing.metric: listing.tensors for listing in rank1.top}
    assert list(by_metric) == [
        "cosine",
        "max_abs_err",
        "max_rel_err",
        "one_thousandth_ratio",
        "five_thousandths_ratio",
    ]
    cosines = [tensor.value for tensor in by_metric["cosine"]]
    assert len(cosines) == 3 and cosines == sorted(cosines)
    errors = [tensor.value for tensor in by_metric["max_abs_err"]]
    assert errors == sorted(errors, reverse=True)


def test_overflow_and_failing_apis_are_findings() -> None:
    summary = summarise_precision(read_precision_inputs(PRECISION / "overflow"), Thresholds())
    assert [(a.rank, a.op_name, a.nodes) for a in summary.anomalies] == [
        (3, "Torch.matmul.12.forward", 2)
    ]
    assert [f.kind for f in summary.findings] == ["overflow"]
    apis = summarise_precision(read_precision_inputs(PRECISION / "acc_check"), Thresholds())
    assert [(a.api, a.directions) for a in apis.failed_apis] == [
        ("Functional.softmax.0", ["forward"]), ("Torch.matmul.3", ["backward"]),
    ]  # fmt: skip
    assert apis.apis_checked == 5 and len(apis.failed_apis[1].details) == 1


def test_a_passing_md5_check_has_no_findings() -> None:
    summary = summarise_precision(read_precision_inputs(PRECISION / "md5"), Thresholds())
    assert summary.findings == [] and summary.comparisons[0].counts["pass"] == 4
