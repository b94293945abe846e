"""Golden files: each fixtures/golden/<case>.log parses to exactly <case>.expected.jsonl.

After an intended change of output, rewrite them with NPUWATCH_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from npuwatch.record_schema import LogRecord
from tests.conftest import GOLDEN, parse
from tests.golden_files import golden_text

CASES = sorted(GOLDEN.glob("*.log"))


def _documents(case: Path) -> list[dict[str, object]]:
    # The file name alone as the path keeps the documents the same on every machine.
    return [record.to_document() for record in parse(case.read_bytes(), path=case.name)]


@pytest.mark.parametrize("case", CASES, ids=[case.stem for case in CASES])
def test_case_parses_to_its_expected_records(case: Path) -> None:
    documents = _documents(case)
    text = "".join(json.dumps(doc, ensure_ascii=False) + "\n" for doc in documents)
    expected = [
        json.loads(line)
        for line in golden_text(case.with_suffix(".expected.jsonl"), text).splitlines()
    ]
    assert documents == expected


@pytest.mark.parametrize("case", CASES, ids=[case.stem for case in CASES])
def test_every_golden_document_satisfies_the_published_schema(case: Path) -> None:
    for document in _documents(case):
        LogRecord.model_validate(document)


def test_there_is_a_golden_case_for_each_area_of_the_formats_doc() -> None:
    names = {case.stem for case in CASES}
    assert {
        "header-anomalies",
        "body-styles",
        "multi-line",
        "console-blocks",
        "prefixes",
        "neighbours",
        "encodings",
    } <= names
