"""Every duration, size and count the configuration takes has a finite range: `inf`, `nan`, a
negative value and one past any use are refused in one line that names the key and the range,
by `config check` and by the agent alike, instead of killing the agent at its start."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from npuwatch.config import Config, load_config
from npuwatch.config.loading import ConfigError
from tests.npuwatch_command import clean_environment, run_npuwatch

NUMBER_TYPES = (int, float)
WRONG_VALUES = {
    "inf": "inf",
    "minus inf": "-inf",
    "nan": "nan",
    "1e12": "1e12",
    "negative": "-1",
    "past 64 bits": str(10**30),
    "a thousand digits": '"' + "9" * 1000 + '"',
}


def numeric_keys(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The dotted keys of every number the configuration takes (durations and sizes too)."""
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            yield from numeric_keys(annotation, (*prefix, name))
        elif annotation in NUMBER_TYPES:
            yield (*prefix, name)


KEYS = list(numeric_keys(Config))


def test_the_configuration_has_numbers_to_bound() -> None:
    assert ("journal", "commit_interval") in KEYS
    assert ("sources", "max_open_files") in KEYS
    assert ("correlate", "quiet_period") in KEYS
    assert len(KEYS) > 30


@pytest.mark.parametrize("key", KEYS, ids=".".join)
@pytest.mark.parametrize("value", WRONG_VALUES.values(), ids=list(WRONG_VALUES))
def test_every_number_of_the_configuration_refuses_a_value_out_of_range(
    key: tuple[str, ...], value: str, tmp_path: Path
) -> None:
    path = tmp_path / "npuwatch.toml"
    path.write_text(f"[{'.'.join(key[:-1])}]\n{key[-1]} = {value}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        load_config(path, {})
    lines = [str(problem) for problem in refused.value.problems]
    assert len(lines) == 1
    assert lines[0].startswith(f"{path}: {'.'.join(key)}: expected ")
    assert len(lines[0]) < 300  # a thousand digits are not repeated whole


def test_config_check_refuses_an_infinite_commit_interval_in_one_line_and_exits_1(
    tmp_path: Path,
) -> None:
    path = tmp_path / "npuwatch.toml"
    path.write_text("[journal]\ncommit_interval = inf\nmax_age = 1e12\n", encoding="utf-8")
    checked = run_npuwatch("config", "check", str(path))
    assert checked.returncode == 1
    assert checked.stdout == ""
    assert checked.stderr.splitlines() == [
        f"{path}: journal.max_age: expected a duration above 0s and at most 3650d, got 1000000000000.0",
        f"{path}: journal.commit_interval: expected a duration above 0s and at most 10m, got inf",
    ]


@pytest.mark.parametrize(
    ("value", "shown"),
    [("inf", "inf"), ("1e12", "1000000000000.0"), ("-5", "-5"), (str(2**70), str(2**70))],
)
def test_the_agent_refuses_a_commit_interval_out_of_range_and_exits_2_before_starting(
    value: str, shown: str, tmp_path: Path
) -> None:
    environment = clean_environment(NPUWATCH_JOURNAL__COMMIT_INTERVAL=value)
    started = run_npuwatch(
        "agent",
        "--root",
        str(tmp_path / "logs"),
        "--state-directory",
        str(tmp_path / "state"),
        env=environment,
        timeout=60,
    )
    assert started.returncode == 2, started.stderr
    assert started.stderr.splitlines() == [
        "npuwatch: environment NPUWATCH_JOURNAL__COMMIT_INTERVAL: journal.commit_interval: "
        f"expected a duration above 0s and at most 10m, got {shown}"
    ]
    assert not (tmp_path / "state").exists()
