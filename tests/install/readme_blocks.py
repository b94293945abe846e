"""The fenced code blocks of a section of a Markdown file, so that tests run what the docs say,
and the commands in them moved into a temporary root."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path


def fenced_blocks(path: Path, heading: str, language: str) -> list[list[str]]:
    """Every block fenced as ```<language> under `heading` (a whole heading line, such as
    `## Run as a service`), up to the next heading of the same or a higher level."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if heading not in lines:
        raise AssertionError(f"{path.name} has no heading {heading!r}")
    level = len(heading) - len(heading.lstrip("#"))
    blocks: list[list[str]] = []
    block: list[str] | None = None
    fence_language = ""
    for line in lines[lines.index(heading) + 1 :]:
        if line.startswith("```"):
            if block is None:
                block, fence_language = [], line[3:].strip()
            else:
                if fence_language == language:
                    blocks.append(block)
                block = None
            continue
        if block is not None:
            block.append(line)
            continue
        depth = len(line) - len(line.lstrip("#"))
        if depth and line[depth : depth + 1] == " " and depth <= level:
            break
    if not blocks:
        raise AssertionError(f"{path.name} has no ```{language} block under {heading!r}")
    return blocks


def commands(block: list[str]) -> list[str]:
    """The shell commands of a block, one a line; ` #` starts the comment at a line's end."""
    found = []
    for line in block:
        command = "" if line.lstrip().startswith("#") else line.split(" #", 1)[0].strip()
        if command:
            found.append(command)
    return found


def moved(command: str, places: Mapping[str, str]) -> str:
    """`command` with each path of `places` (the longest first) replaced by its stand-in."""
    for original in sorted(places, key=len, reverse=True):
        command = command.replace(original, places[original])
    return command


def outside(command: str, root: Path, allowed: tuple[str, ...] = ()) -> list[str]:
    """The absolute paths in `command` that are neither under `root` nor `allowed`: a step
    that would touch this machine instead of the temporary root."""
    words = shlex.split(command.replace(">", " > ").replace("|", " | "))
    return [
        word
        for word in words
        if word.startswith("/") and not Path(word).is_relative_to(root) and word not in allowed
    ]
