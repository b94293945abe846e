"""The C extensions under coverage-guided fuzzing (atheris, libFuzzer): instrumented and built
with AddressSanitizer and UndefinedBehaviorSanitizer, each runs a fixed number of inputs and
must give what its Python reference gives on every one, with no sanitizer report.

Marked integration: it needs clang (CI installs it, .ci/run). bench/fuzz.sh runs the same
harness for minutes, with a corpus kept between runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.budget import BUDGET, LONG_FACTOR
from tests.fuzz.native_build import (
    SOURCES,
    FuzzBuild,
    atheris_preload,
    build,
    clang,
    failure_report,
    run_harness,
)

pytestmark = pytest.mark.integration

RUNS = {"first-pass": 30_000, "block-columns": 15_000}
"""Inputs per target in the normal run (about 10 s each here); the long budget multiplies."""
TIME_CAP_S = 45
"""libFuzzer stops at this many seconds whatever the count (a slow machine)."""


@pytest.fixture(scope="module")
def instrumented(tmp_path_factory: pytest.TempPathFactory) -> tuple[FuzzBuild, Path]:
    if clang() is None:
        pytest.skip("clang is not installed (apt-get install clang; .ci/run installs it)")
    preload = atheris_preload()
    if preload is None:
        pytest.skip("atheris is not installed (pip install -e '.[dev]')")
    return build(tmp_path_factory.mktemp("fuzz-build")), preload


@pytest.mark.parametrize("target", sorted(SOURCES))
def test_the_c_extension_gives_what_its_python_reference_gives_on_every_input(
    target: str, instrumented: tuple[FuzzBuild, Path], tmp_path: Path
) -> None:
    built, preload = instrumented
    factor = LONG_FACTOR if BUDGET != "ci" else 1
    artifacts = tmp_path / "crashes"
    result = run_harness(
        target, built, preload, tmp_path / "corpus", artifacts,
        (f"-runs={RUNS[target] * factor}", f"-max_total_time={TIME_CAP_S * factor}"),
    )  # fmt: skip
    assert result.returncode == 0, failure_report(target, result, artifacts)
    assert not list(artifacts.iterdir()), failure_report(target, result, artifacts)
    assert "Done " in result.stderr, failure_report(target, result, artifacts)
