"""How a baseline is named: `<YYYY-MM-DD>_<model>_<scenario>`, every part safe for a folder.

The parts never hold `_`, so a folder name splits back into its three parts, and they are lower
case, so that two spellings of a model do not become two folders on a case-insensitive disk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

NAME_RULE = (
    "a baseline is named <date>_<model>_<scenario>; model and scenario are made safe for a folder "
    "name: lower case, every run of characters other than a-z, 0-9, '.' and '-' becomes one '-', "
    "leading and trailing '-' and '.' are dropped, at most 64 characters ('Llama 2 7B/BF16' "
    "becomes llama-2-7b-bf16)"
)
_PART_LIMIT = 64
_UNSAFE = re.compile(r"[^a-z0-9.-]+")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_FOLDER = re.compile(r"(\d{4}-\d{2}-\d{2})_([a-z0-9.-]+)_([a-z0-9.-]+)")


def safe_part(text: str, what: str) -> str:
    """`text` as one part of a baseline name (NAME_RULE); ValueError when nothing is left."""
    part = _UNSAFE.sub("-", text.strip().lower()).strip("-.")[:_PART_LIMIT].strip("-.")
    if not part:
        raise ValueError(
            f"{what} {text!r} has no letter or digit a-z, 0-9 to name a folder with: "
            "give a name such as llama2-7b"
        )
    return part


@dataclass(frozen=True)
class BaselineName:
    """The three parts of a baseline's name, already safe for a folder name."""

    date: str
    model: str
    scenario: str

    @property
    def folder(self) -> str:
        return f"{self.date}_{self.model}_{self.scenario}"

    @classmethod
    def of(cls, day: str, model: str, scenario: str) -> BaselineName:
        """The name of what the user typed; ValueError that says what to type instead."""
        if not _DATE.fullmatch(day):
            raise ValueError(f"--date {day!r}: give a date as YYYY-MM-DD, such as 2025-03-01")
        try:
            date.fromisoformat(day)
        except ValueError:
            raise ValueError(f"--date {day!r} is no day of the calendar") from None
        return cls(day, safe_part(model, "--model"), safe_part(scenario, "--scenario"))

    @classmethod
    def parse(cls, folder: str) -> BaselineName | None:
        match = _FOLDER.fullmatch(folder)
        return cls(match[1], match[2], match[3]) if match else None
