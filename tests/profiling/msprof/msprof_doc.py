"""The real samples of ../shared/design/formats/msprof.md, read from the doc at test time.

The samples are never copied into the repository. Fenced blocks are named by the section heading
they sit under (`5.1`) and kept in order; the doc writes a literal TAB of the original file as
`\\t`, which is turned back into a TAB here.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from tests import formats_doc

FORMATS_DOC = formats_doc.FORMATS / "msprof.md"
_BACKTICKED = re.compile(r"`([^`]+)`")


@cache
def doc_text() -> str:
    return formats_doc.doc_text(FORMATS_DOC)


@cache
def blocks() -> dict[str, list[str]]:
    """Fenced blocks by section, in order, TABs restored."""
    found: dict[str, list[str]] = {}
    for section, lines in formats_doc.fenced_blocks(FORMATS_DOC):
        found.setdefault(section, []).append("\n".join(lines).replace("\\t", "\t") + "\n")
    return found


def block(section: str, starts_with: str) -> str:
    """The one block of `section` whose text starts with `starts_with`."""
    matches = [text for text in blocks()[section] if text.lstrip().startswith(starts_with)]
    assert len(matches) == 1, f"{len(matches)} blocks of §{section} start with {starts_with!r}"
    return matches[0]


def section_lines(section: str) -> list[str]:
    """The prose and table lines of a section (outside fenced blocks)."""
    lines: list[str] = []
    current = "0"
    fenced = False
    for line in doc_text().splitlines():
        if formats_doc.FENCE.match(line):
            fenced = not fenced
            continue
        heading = formats_doc.HEADING.match(line)
        if heading is not None and not fenced:
            current = heading[1]
        elif current == section and not fenced:
            lines.append(line)
    return lines


def backticked_headers(line: str) -> list[str]:
    """The CSV headers quoted in backticks in one line of a table (three commas or more; the
    elided `…,Block Num,...` of §2.2 is not a header)."""
    return [
        text
        for text in _BACKTICKED.findall(line)
        if text.count(",") >= 3 and not text.startswith("…")
    ]


def python_list(text: str, name: str, replacements: dict[str, str] | None = None) -> list[str]:
    """The list of strings assigned to `name` in a Python block (`name = [...]`)."""
    match = re.search(rf"{name}\s*=\s*(\[.*?\])", text, re.DOTALL)
    assert match is not None, f"no {name} = [...] in the block"
    literal = match[1]
    for old, new in (replacements or {}).items():
        literal = literal.replace(old, new)
    value = ast.literal_eval(literal)
    assert isinstance(value, list)
    return [str(item) for item in value]


def markdown_table_as_csv(text: str) -> str:
    """A table an author rendered as markdown (`| a | b |`), as the CSV it was made from."""
    rows = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.strip() or all(set(cell) <= {"-", ":"} for cell in cells):
            continue
        rows.append(",".join(cells))
    return "\n".join(rows) + "\n"


def tree_listing_paths(text: str) -> list[tuple[str, bool]]:
    """(relative path, is a folder) of a `tree`-style listing; `...` lines are skipped and an
    entry without a file suffix is a folder."""
    entries: list[tuple[int, str]] = []
    for line in text.splitlines():
        match = re.search(r"(?:├── |└── )(\S.*)$", line)
        if match is None:
            continue
        entries.append((match.start(1), match[1].strip()))
    base = min(column for column, _ in entries)
    stack: list[str] = []
    paths: list[tuple[str, bool]] = []
    for column, name in entries:
        depth = (column - base) // 4
        stack[depth:] = [name]
        paths.append(("/".join(stack), Path(name).suffix == ""))
    return paths


def build_tree(root: Path, entries: list[tuple[str, bool]]) -> None:
    for relative, folder in entries:
        path = root / relative
        if folder:
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"")
