"""What a journal folder holds, counted by line, for exact-count tests of agents whose state is
not the harness's (a full disk, a state folder of its own)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from npuwatch.journal.block import decode_block
from npuwatch.journal.reader import JournalReader, Position


def journal_lines(journal: Path) -> Counter[str]:
    """Every line of every record in the journal at `journal` (none when it does not exist)."""
    counted: Counter[str] = Counter()
    if not journal.is_dir():
        return counted
    with JournalReader(journal) as reader:
        position = Position()
        while page := reader.blocks_after(position, 64):
            for _, block in page:
                for record in decode_block(block.payload):
                    counted.update(record.original.split("\n"))
            position = page[-1][0]
    return counted
