"""The real `npu-smi` outputs of the formats doc, read from the doc at test time.

The samples live in ../shared/design/formats/npu_smi.md and are never copied into the
repository. Each fenced block that holds an npu-smi table is named by its section heading
(`1.1`, and `2.2#2` for the second block under one heading).
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.formats_doc import FORMATS, fenced_blocks, named_by_section

FORMATS_DOC = FORMATS / "npu_smi.md"
FAKE_NPU_SMI = Path(__file__).parents[1] / "fixtures" / "fake-npu-smi" / "npu-smi"
"""An executable that replays a recorded output (see its docstring): the only stand-in, since
there is no NPU here."""

_TABLE_BORDER = re.compile(r"^\s*\+[-=+]+\+\s*$")
_BUS_ID_ROW = re.compile(r"^\s*\|.*\|\s*[0-9A-Fa-f]{4}:[0-9A-Fa-fx]{2}:[0-9A-Fa-f]{2}\.\d\s*\|")


def load_doc_samples(path: Path = FORMATS_DOC) -> dict[str, str]:
    """The fenced blocks of the formats doc that contain an npu-smi table, by section heading."""
    tables = [
        (section, "\n".join(lines) + "\n")
        for section, lines in fenced_blocks(path)
        if any(_TABLE_BORDER.match(x) or _BUS_ID_ROW.match(x) for x in lines)
    ]
    return named_by_section(tables)


_DETAIL_SECTIONS = ("5", "6", "7")


def load_detail_samples(path: Path = FORMATS_DOC) -> dict[str, str]:
    """Every fenced block of the doc's §5–§7 (the `-t <type>`, `-m`, `-l` and `-t topo`
    outputs), by section heading (`6#2`, `7.1`)."""
    return named_by_section(
        [
            (section, "\n".join(lines) + "\n")
            for section, lines in fenced_blocks(path)
            if section.split(".")[0] in _DETAIL_SECTIONS
        ]
    )


def table_only(sample: str) -> str:
    """A sample without the shell prompt line some posters pasted above the table."""
    return "\n".join(x for x in sample.splitlines() if not x.lstrip().startswith("$")) + "\n"


def with_hbm_used(sample: str, npu: int, used_mb: int) -> str:
    """A real sample with one NPU's HBM use changed to `used_mb` (the rest untouched).

    The HBM pair is the last `used / total` of the chip's second row, the row that starts with
    the chip id and carries the Bus-Id; the first row starts with the NPU id and the name.
    """
    lines = sample.splitlines()
    for index, line in enumerate(lines):
        cells = line.split("|")
        if len(cells) > 3 and cells[1].split()[:1] == [str(npu)] and len(cells[1].split()) > 1:
            second = lines[index + 1]
            head, sep, tail = second.rpartition("/")
            used = head.rstrip().rsplit(None, 1)
            assert sep and len(used) == 2, f"no HBM pair in {second!r}"
            width = len(head) - len(used[0]) - 1
            lines[index + 1] = f"{used[0]} {str(used_mb).rjust(width)}{sep}{tail}"
            return "\n".join(lines) + "\n"
    raise AssertionError(f"NPU {npu} is not in the sample")
