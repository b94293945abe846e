"""The fenced code blocks of a formats doc under ../shared/design/formats, with the numbered
section each sits under. The real samples are read from the docs at test time and never copied
into the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO

FORMATS = REPO.parent / "shared" / "design" / "formats"
HEADING = re.compile(r"^#{2,3}\s+(\d+(?:\.\d+)?)\b")
FENCE = re.compile(r"^```")


def doc_text(path: Path) -> str:
    """The doc's text; where ../shared is not beside the checkout, the test (or the module
    that reads it as it is collected) is skipped, saying what it needs."""
    if not path.is_file():
        pytest.skip(
            f"needs ../shared beside the checkout (the formats doc {path.name} holds the real "
            "samples this reads)",
            allow_module_level=True,
        )
    return path.read_text(encoding="utf-8")


def fenced_blocks(path: Path) -> list[tuple[str, list[str]]]:
    """(section, lines) of every fenced block of the doc, in order; `section` is the number of
    the nearest heading above it (`5.1`), "0" before the first."""
    found: list[tuple[str, list[str]]] = []
    section = "0"
    block: list[str] | None = None
    for line in doc_text(path).splitlines():
        if block is not None:
            if FENCE.match(line):
                found.append((section, block))
                block = None
            else:
                block.append(line)
            continue
        heading = HEADING.match(line)
        if heading is not None:
            section = heading[1]
        elif FENCE.match(line):
            block = []
    return found


def named_by_section(blocks: list[tuple[str, str]]) -> dict[str, str]:
    """Texts by section: one block under a heading is named by the heading alone (`7.1`),
    several by `heading#n` (`6#2`), in order."""
    per_section: dict[str, list[str]] = {}
    for section, text in blocks:
        per_section.setdefault(section, []).append(text)
    return {
        (section if len(texts) == 1 else f"{section}#{number}"): text
        for section, texts in per_section.items()
        for number, text in enumerate(texts, start=1)
    }
