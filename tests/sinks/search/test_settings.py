"""Connections from the `[sinks.elasticsearch]` section: where secrets come from, and that they
never appear in what could be logged."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from npuwatch.config.sinks import SearchSinkSection
from npuwatch.sinks.search.settings import (
    SecretUnreadable,
    connection_from,
    dead_letter_path,
    ship_settings,
)

KEY = "c2VjcmV0LWlkOnNlY3JldC1rZXk="


def test_the_api_key_comes_from_its_file_and_the_environment_wins(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(KEY + "\n", encoding="utf-8")
    key_file.chmod(0o600)
    section = SearchSinkSection(api_key_file=key_file)
    assert connection_from(section, {}).api_key == KEY
    assert connection_from(section, {"NPUWATCH_ES_API_KEY": "other"}).api_key == "other"


def test_secrets_stay_out_of_the_connections_text(tmp_path: Path) -> None:
    password = tmp_path / "password"
    password.write_text("hunter2-password", encoding="utf-8")
    password.chmod(0o600)
    section = SearchSinkSection(username="npuwatch", password_file=password)
    connection = connection_from(section, {"NPUWATCH_ES_API_KEY": KEY})
    assert connection.password == "hunter2-password"
    for text in (repr(connection), str(connection)):
        assert "hunter2" not in text and KEY not in text


@pytest.mark.parametrize("content", [None, ""])
def test_a_missing_or_empty_secret_file_is_one_clear_error(
    tmp_path: Path, content: str | None
) -> None:
    path = tmp_path / "key"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(SecretUnreadable, match=str(path)):
        connection_from(SearchSinkSection(api_key_file=path), {})


def test_the_dead_letter_file_defaults_to_the_state_directory(tmp_path: Path) -> None:
    section = SearchSinkSection(flavour="opensearch")
    assert dead_letter_path(section, tmp_path) == tmp_path / "dead-letter" / "opensearch.jsonl"
    absolute = tmp_path / "elsewhere.jsonl"
    assert dead_letter_path(SearchSinkSection(dead_letter_file=absolute), tmp_path) == absolute


def test_a_namespace_that_elastic_would_refuse_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="lower case"):
        SearchSinkSection(namespace="Prod-1")


@pytest.mark.parametrize(
    ("minimum", "left_in_journal"),
    [
        ("DEBUG", set()),
        ("INFO", {"DEBUG", "TRACE"}),
        ("WARNING", {"DEBUG", "TRACE", "INFO"}),
        ("ERROR", {"DEBUG", "TRACE", "INFO", "WARNING", "WARN", "EVENT"}),
    ],
)
def test_min_level_names_the_levels_left_in_the_journal(
    minimum: str, left_in_journal: set[str]
) -> None:
    settings = ship_settings(SearchSinkSection(min_level=minimum), "node-1")  # type: ignore[arg-type]
    assert settings.skipped_levels == left_in_journal
    assert None not in settings.skipped_levels  # a record without a level is always shipped


def test_a_min_level_outside_the_choices_is_a_configuration_error() -> None:
    with pytest.raises(ValidationError, match="min_level"):
        SearchSinkSection(min_level="NOTICE")  # type: ignore[arg-type]
