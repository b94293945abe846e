"""Searching the archive's CSV files for operators, without pandas."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from npuwatch.profiling.baseline.archive import OPERATORS_HEADER, Archive
from npuwatch.profiling.baseline.names import BaselineName
from npuwatch.profiling.baseline.search import search_archive

LLAMA = "\n".join(
    [
        OPERATORS_HEADER,
        "aclnnMatmul_MatMulCommon_MatMulV2,MatMulV2,AI_CORE,84,21772.972,259.202,119.763,418.605",
        '"odd,name",Cast,AI_VECTOR_CORE,2,6.200,3.100,3.000,3.200',
        "aclnnAdd_AddAiCore_Add,Add,AI_VECTOR_CORE,24,356.974,14.874,13.660,16.063",
    ]
)
RESNET = "\n".join(
    [OPERATORS_HEADER, "fc_MatMulV2,MatMulV2,AI_CORE,3,144.964,48.321,48.130,48.423"]
)


def archive_of(root: Path) -> Archive:
    archive = Archive(root)
    for folder, table in (
        ("2025-03-01_llama2-7b_pretrain", LLAMA),
        ("2025-04-01_resnet50_infer", RESNET),
    ):
        name = BaselineName.parse(folder)
        assert name is not None
        archive.store(name, {"op_summary.csv": table + "\n"}, {})
    return archive


def found(archive: Archive, pattern: str | None, flags: int = 0) -> list[str]:
    problems: list[str] = []
    compiled = re.compile(pattern, flags) if pattern is not None else None
    lines = [match.line() for match in search_archive(archive, compiled, problems.append)]
    assert problems == []
    return lines


def test_a_pattern_finds_operators_by_name_in_every_baseline(tmp_path: Path) -> None:
    assert found(archive_of(tmp_path), "MatMul") == [
        "2025-03-01_llama2-7b_pretrain: aclnnMatmul_MatMulCommon_MatMulV2 MatMulV2 AI_CORE 84 21772.972 259.202",
        "2025-04-01_resnet50_infer: fc_MatMulV2 MatMulV2 AI_CORE 3 144.964 48.321",
    ]


def test_a_pattern_finds_operators_by_type(tmp_path: Path) -> None:
    assert found(archive_of(tmp_path), "^Cast$") == [
        "2025-03-01_llama2-7b_pretrain: odd,name Cast AI_VECTOR_CORE 2 6.200 3.100"
    ]


def test_the_case_is_ignored_only_when_asked(tmp_path: Path) -> None:
    archive = archive_of(tmp_path)
    assert found(archive, "addaicore") == []
    assert len(found(archive, "addaicore", re.IGNORECASE)) == 1


def test_the_core_type_is_not_searched(tmp_path: Path) -> None:
    assert found(archive_of(tmp_path), "AI_VECTOR") == []


def test_no_pattern_finds_every_operator(tmp_path: Path) -> None:
    assert len(found(archive_of(tmp_path), None)) == 4


def test_a_match_as_a_document_has_numbers_and_where_it_came_from(tmp_path: Path) -> None:
    archive = archive_of(tmp_path)
    (match,) = search_archive(archive, re.compile("fc_"), lambda problem: None)
    assert match.document() == {
        "baseline": "2025-04-01_resnet50_infer",
        "date": "2025-04-01",
        "model": "resnet50",
        "scenario": "infer",
        "op_name": "fc_MatMulV2",
        "op_type": "MatMulV2",
        "task_type": "AI_CORE",
        "count": 3,
        "total_us": 144.964,
        "avg_us": 48.321,
        "min_us": 48.13,
        "max_us": 48.423,
        "path": str(archive.folder / "2025-04-01_resnet50_infer" / "op_summary.csv"),
    }


def test_a_table_without_the_searched_columns_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    archive = archive_of(tmp_path)
    (archive.folder / "2025-04-01_resnet50_infer" / "op_summary.csv").write_text("a,b\n1,2\n")
    problems: list[str] = []
    matches = list(search_archive(archive, re.compile("MatMul"), problems.append))
    assert [match.baseline for match in matches] == ["2025-03-01_llama2-7b_pretrain"]
    assert len(problems) == 1 and "no column op_name, op_type" in problems[0]


def test_searching_loads_no_pandas(tmp_path: Path) -> None:
    archive_of(tmp_path)
    code = (
        "import re, sys\n"
        "from pathlib import Path\n"
        "from npuwatch.profiling.baseline.archive import Archive\n"
        "from npuwatch.profiling.baseline.search import search_archive\n"
        f"matches = list(search_archive(Archive(Path({str(tmp_path)!r})), re.compile('MatMul'), print))\n"
        "assert len(matches) == 2, matches\n"
        "assert 'pandas' not in sys.modules\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
