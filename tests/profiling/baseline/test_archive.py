"""The baseline archive: names, where it is, storing atomically, listing and resolving names."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from npuwatch.profiling.baseline.archive import (
    OPERATORS_HEADER,
    Archive,
    BaselineExistsError,
    UnknownBaselineError,
    default_archive,
)
from npuwatch.profiling.baseline.names import BaselineName, safe_part
from npuwatch.profiling.msprof.operators import OPERATOR_COLUMNS

CSV = OPERATORS_HEADER + "\nCast66,Cast,AI_VECTOR_CORE,2,6.2,3.1,3.0,3.2\n"


def store(archive: Archive, folder: str, *, created: str = "", force: bool = False) -> Path:
    name = BaselineName.parse(folder)
    assert name is not None
    metadata = {"created_utc": created, "operators": 1, "total_us": 6.2}
    return archive.store(name, {"op_summary.csv": CSV}, metadata, force=force)


# --- names ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "part"),
    [
        ("llama2-7b", "llama2-7b"),
        ("Llama 2 7B/BF16", "llama-2-7b-bf16"),
        ("pretrain_bs8", "pretrain-bs8"),
        ("qwen2.5-72b", "qwen2.5-72b"),
        ("../../etc", "etc"),
        ("  --Deep  Seek--  ", "deep-seek"),
        ("模型 v1", "v1"),
    ],
)
def test_a_model_or_scenario_becomes_a_safe_folder_name_part(given: str, part: str) -> None:
    assert safe_part(given, "--model") == part


def test_a_part_is_at_most_64_characters() -> None:
    assert safe_part("x" * 100, "--model") == "x" * 64


@pytest.mark.parametrize("given", ["", "模型", "...", "___"])
def test_a_part_with_nothing_safe_left_is_refused_with_advice(given: str) -> None:
    with pytest.raises(ValueError, match="give a name such as llama2-7b"):
        safe_part(given, "--model")


def test_a_name_splits_back_into_its_parts() -> None:
    name = BaselineName.of("2025-03-01", "Llama 2 7B", "pretrain_bs8")
    assert name.folder == "2025-03-01_llama-2-7b_pretrain-bs8"
    assert BaselineName.parse(name.folder) == name


@pytest.mark.parametrize(("day", "says"), [("1 March", "YYYY-MM-DD"), ("2025-02-30", "no day")])
def test_a_date_must_be_a_calendar_day_written_yyyy_mm_dd(day: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        BaselineName.of(day, "m", "s")


def test_the_archive_header_is_the_operator_table_of_the_parsers() -> None:
    assert OPERATORS_HEADER.split(",") == OPERATOR_COLUMNS


# --- where the archive is -------------------------------------------------------------------


def test_the_environment_names_the_archive_first(tmp_path: Path) -> None:
    system = tmp_path / "system"
    system.mkdir()
    environ = {"NPUWATCH_ARCHIVE": str(tmp_path / "mine")}
    assert default_archive(environ, home=tmp_path, system=system) == tmp_path / "mine"


def test_a_writable_system_archive_comes_next(tmp_path: Path) -> None:
    system = tmp_path / "system"
    system.mkdir()
    assert default_archive({}, home=tmp_path, system=system) == system


def test_a_system_archive_this_user_cannot_write_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    system = tmp_path / "system"
    system.mkdir()
    # The tests may run as root, who may write anywhere: the user's rights are asked of os.access.
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != system)
    expected = tmp_path / ".local" / "share" / "npuwatch" / "archive"
    assert default_archive({}, home=tmp_path, system=system) == expected


def test_without_a_system_archive_it_is_in_the_users_data_folder(tmp_path: Path) -> None:
    missing = tmp_path / "no-such"
    expected = tmp_path / ".local" / "share" / "npuwatch" / "archive"
    assert default_archive({}, home=tmp_path, system=missing) == expected
    data_home = {"XDG_DATA_HOME": str(tmp_path / "data")}
    assert default_archive(data_home, home=tmp_path, system=missing) == (
        tmp_path / "data" / "npuwatch" / "archive"
    )


# --- storing --------------------------------------------------------------------------------


def test_a_stored_baseline_is_its_files_and_its_metadata(tmp_path: Path) -> None:
    archive = Archive(tmp_path)
    path = store(archive, "2025-03-01_llama2-7b_pretrain")
    assert path == tmp_path / "baselines" / "2025-03-01_llama2-7b_pretrain"
    assert (path / "op_summary.csv").read_text() == CSV
    document = json.loads((path / "baseline.json").read_text())
    assert document["name"] == "2025-03-01_llama2-7b_pretrain"
    assert (document["date"], document["model"], document["scenario"]) == (
        "2025-03-01",
        "llama2-7b",
        "pretrain",
    )
    assert document["schema_version"] == 1 and document["total_us"] == 6.2


def test_storing_leaves_no_temporary_folder(tmp_path: Path) -> None:
    archive = Archive(tmp_path)
    store(archive, "2025-03-01_m_s")
    store(archive, "2025-03-01_m_s", force=True)
    assert sorted(p.name for p in archive.folder.iterdir()) == ["2025-03-01_m_s"]


def test_an_existing_baseline_is_not_overwritten(tmp_path: Path) -> None:
    archive = Archive(tmp_path)
    path = store(archive, "2025-03-01_m_s", created="first")
    with pytest.raises(BaselineExistsError, match="add --force to replace it"):
        store(archive, "2025-03-01_m_s", created="second")
    assert json.loads((path / "baseline.json").read_text())["created_utc"] == "first"


def test_force_replaces_a_baseline_whole(tmp_path: Path) -> None:
    archive = Archive(tmp_path)
    path = store(archive, "2025-03-01_m_s", created="first")
    (path / "stale.csv").write_text("left over\n")
    store(archive, "2025-03-01_m_s", created="second", force=True)
    assert json.loads((path / "baseline.json").read_text())["created_utc"] == "second"
    assert not (path / "stale.csv").exists()


def test_a_failed_write_leaves_the_archive_as_it_was(tmp_path: Path) -> None:
    archive = Archive(tmp_path)
    name = BaselineName("2025-03-01", "m", "s")
    with pytest.raises(OSError):
        # A file where a folder is needed fails half-way through the writing.
        archive.store(name, {"op_summary.csv": CSV, "op_summary.csv/x.csv": ""}, {})
    assert list(archive.folder.iterdir()) == []


# --- listing and resolving ------------------------------------------------------------------


def test_listing_is_oldest_first_and_skips_what_is_no_baseline(tmp_path: Path) -> None:
    archive = Archive(tmp_path)
    store(archive, "2025-03-02_m_s")
    store(archive, "2025-03-01_m_s")
    (archive.folder / ".tmp-2025-03-03_m_s-0123").mkdir()
    (archive.folder / "notes").mkdir()
    assert [info.name for info in archive.baselines()] == ["2025-03-01_m_s", "2025-03-02_m_s"]


def test_an_empty_or_missing_archive_lists_nothing(tmp_path: Path) -> None:
    assert Archive(tmp_path / "nowhere").baselines() == []


def test_a_baseline_with_unreadable_metadata_is_listed_from_its_name(tmp_path: Path) -> None:
    archive = Archive(tmp_path)
    path = store(archive, "2025-03-01_llama2-7b_pretrain")
    (path / "baseline.json").write_text("{not json")
    (info,) = archive.baselines()
    assert (info.date, info.model, info.scenario) == ("2025-03-01", "llama2-7b", "pretrain")
    assert info.operators is None
    assert info.problem is not None and "unreadable" in info.problem


def test_a_whole_name_or_a_unique_beginning_names_a_baseline(tmp_path: Path) -> None:
    archive = Archive(tmp_path)
    store(archive, "2025-03-01_llama2-7b_pretrain")
    store(archive, "2025-03-01_llama2-7b_pretrain-long")
    store(archive, "2025-04-01_resnet50_infer")
    assert archive.resolve("2025-03-01_llama2-7b_pretrain").name.endswith("_pretrain")
    assert archive.resolve("2025-04").name == "2025-04-01_resnet50_infer"
    with pytest.raises(UnknownBaselineError, match="begins 2 baseline names"):
        archive.resolve("2025-03-01_llama")


def test_an_unknown_name_lists_the_baselines_there_are(tmp_path: Path) -> None:
    archive = Archive(tmp_path)
    store(archive, "2025-03-01_llama2-7b_pretrain")
    store(archive, "2025-04-01_resnet50_infer")
    with pytest.raises(UnknownBaselineError) as raised:
        archive.resolve("2024-llama")
    assert "2025-03-01_llama2-7b_pretrain, 2025-04-01_resnet50_infer" in str(raised.value)


def test_an_empty_archive_says_how_to_fill_it(tmp_path: Path) -> None:
    with pytest.raises(UnknownBaselineError, match="npuwatch baseline add"):
        Archive(tmp_path).resolve("latest")


def test_latest_is_the_newest_of_its_model_and_scenario(tmp_path: Path) -> None:
    archive = Archive(tmp_path)
    store(archive, "2025-03-01_llama2-7b_pretrain")
    store(archive, "2025-03-09_llama2-7b_pretrain")
    store(archive, "2025-04-01_resnet50_infer")
    latest = archive.resolve("latest", model="Llama2-7B", scenario="pretrain")
    assert latest.name == "2025-03-09_llama2-7b_pretrain"
    assert archive.resolve("latest", model="resnet50").name == "2025-04-01_resnet50_infer"


def test_latest_among_several_models_asks_which(tmp_path: Path) -> None:
    archive = Archive(tmp_path)
    store(archive, "2025-03-01_llama2-7b_pretrain")
    store(archive, "2025-04-01_resnet50_infer")
    with pytest.raises(UnknownBaselineError, match="add --model and --scenario"):
        archive.resolve("latest")
