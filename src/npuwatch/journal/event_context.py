"""An event's context in the journal: where its records are, not their text.

A rule event carries the records before and after its trigger (50 and 5 by default). Kept as text
in each event, they made the journal larger than the logs it indexes: on bench/real_tree.py's
tree of real-format lines, 88 % of each event's 11 kB and 193 of 279 MB of journal, the same
lines the blocks already hold, many times over, since the events of one burst share their
context. So the journal stores an event's context as a reference: the file, the trigger's offset,
how many records before and after, and the offsets of the first and the last of them; reading the
event (shipping it, `grep`) puts the text back from the blocks, and the document is the one the
rule made. An event whose context records do not all have offsets keeps its text, as do the
events of journals written before this format (they are read as they are).

If the blocks are gone when the event is read (retention took the segment of the records before
it, and shipping was that far behind), the context is empty and says `"lost": true`, rather than
being made of other records.
"""

from __future__ import annotations

import json
import logging
from operator import itemgetter
from typing import Any

from npuwatch.journal.context import SEGMENTS_AWAY, ContextReader, Run, text_crc
from npuwatch.journal.damage import DamageNotice
from npuwatch.journal.question import Directory

log = logging.getLogger(__name__)

_DECODER = json.JSONDecoder()
_DUMPED: dict[str, Any] = {"ensure_ascii": False, "separators": (",", ":")}
"""How an event document is dumped to the journal (the same for the context put back)."""

_REFERENCE_MARK = '"context":{"file":'
"""How a stored document that holds a reference starts its context (`stored_document` writes
"file" first; json.dumps with the journal's separators): read events without one are not parsed."""
_IN_FILE_ORDER = itemgetter(0, 1)
_CACHED_BLOCKS = 2
"""Blocks a reader keeps decoded: events come in the order they were written, nearly always
from the block last read, and the agent's shipping thread should hold little."""


def stored_document(
    document: dict[str, Any],
    file_key: str | None,
    trigger: tuple[int | None, str],
    span: tuple[int, int] | None,
) -> str:
    """The JSON text the journal stores for `document` (an event's): its context replaced by a
    reference to the records when they can be found again (the trigger, at offset `trigger[0]`
    of `file_key` with the text `trigger[1]`; the context from the offsets `span`), else as it
    is."""
    at = trigger[0]
    finding = document.get("ascend", {}).get("finding")
    context = finding.get("context", {}) if finding is not None else {}
    before, after = context.get("before", []), context.get("after", [])
    if file_key is None or at is None or span is None or not (before or after):
        return json.dumps(document, **_DUMPED)
    finding["context"] = {
        "file": file_key,
        "at": at,
        "before": len(before),
        "after": len(after),
        "span": list(span),
        "crc": text_crc(trigger[1]),
    }
    return json.dumps(document, **_DUMPED)


class EventContexts:
    """Completes the events read from one journal directory: the context's text is read from
    the blocks. One per reader; not thread-safe."""

    def __init__(
        self,
        directory: Directory,
        cached_blocks: int = _CACHED_BLOCKS,
        notice: DamageNotice | None = None,
    ) -> None:
        self._blocks = ContextReader(directory, cached_blocks, notice)
        self.lost = 0
        """Events whose context could not be read back (see the module's docstring)."""

    def close(self) -> None:
        self._blocks.close()

    def complete(self, sequence: int, document: str) -> str:
        """The event document `document`, read from segment `sequence`, as its rule made it."""
        return self.complete_all(sequence, [document])[0]

    def complete_all(self, sequence: int, documents: list[str]) -> list[str]:
        """`complete` for each of `documents` (read from segment `sequence`), in their order.
        They are completed in the order of their records in the journal, so that a block is
        decoded once for the events of a page that need it rather than once per event (the
        events of many files interleave)."""
        completed = list(documents)
        self._blocks.forget_spans()  # the segment may have grown since the last page
        references: list[tuple[str, int, int, int, int, dict[str, Any]]] = []
        for number, document in enumerate(documents):
            start = document.find(_REFERENCE_MARK)
            if start < 0:
                continue
            # Only the reference is parsed and replaced: the rest is the text the rule's
            # document was dumped to, so the result is the bytes of the document as it was made.
            value_at = start + len('"context":')
            try:
                reference, end = _DECODER.raw_decode(document, value_at)
                file_key, at = str(reference["file"]), int(reference["at"])
            except (ValueError, KeyError, TypeError, RecursionError):
                continue  # damaged: the document is given as it is, for its reader to judge
            references.append((file_key, at, number, value_at, end, reference))
        for _, _, number, value_at, end, reference in sorted(references, key=_IN_FILE_ORDER):
            document = documents[number]
            context = json.dumps(self._texts(sequence, reference), **_DUMPED)
            completed[number] = f"{document[:value_at]}{context}{document[end:]}"
        return completed

    def release_before(self, sequence: int) -> None:
        """Events of segments before `sequence` will not be read again: close what they held
        open, except the segments their context can be in."""
        self._blocks.release_before(sequence - SEGMENTS_AWAY)

    def _texts(self, sequence: int, reference: dict[str, Any]) -> dict[str, Any]:
        try:
            before, after = int(reference["before"]), int(reference["after"])
            first, last = reference["span"]
            check = reference.get("crc")
            file_key, at = str(reference["file"]), int(reference["at"])
            check = None if check is None else int(check)
        except (ValueError, KeyError, TypeError):  # a damaged reference names no records
            place = None
        else:
            place = self._blocks.locate(sequence, file_key, at, check)
        if place is not None:
            earlier, later = self._blocks.runs_around(place, before, after)
            if _covers(earlier, before, first, last=False) and _covers(later, after, last, True):
                return {
                    "before": [text for run in earlier for text in run.originals()],
                    "after": [text for run in later for text in run.originals()],
                }
        if not self.lost and not self._blocks.damage.segments:  # damage was said already
            log.warning(
                "the records around an event of %s at offset %s were not found in segment %d "
                "or the %d before it (removed by retention before the event was read, damaged, "
                "or further back); the event is given without its context",
                reference.get("file", "?"),
                reference.get("at", "?"),
                sequence,
                SEGMENTS_AWAY,
            )
        self.lost += 1
        return {"before": [], "after": [], "lost": True}


def _covers(runs: list[Run], count: int, offset: int, last: bool) -> bool:
    """Whether `runs` hold `count` records and the first (or `last`) starts at `offset`: the
    records the event's rule saw, not others (a file truncated and written again)."""
    if sum(map(len, runs)) != count:
        return False
    if count == 0:
        return True
    run = runs[-1] if last else runs[0]
    edge = run.stop - 1 if last else run.start
    return bool(run.block.offsets[edge] == offset)


def is_document(text: str) -> bool:
    """Whether `text` is a JSON object, as every event and state document is (whoever reads
    one reads fields from it): one that is not is damage, left out by the readers."""
    try:
        return isinstance(json.loads(text), dict)
    except (ValueError, RecursionError):
        return False
