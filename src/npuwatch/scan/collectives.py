"""The cross-device part of a scan: HCCL facts and failures of every file, and the incidents.

Records go through the extractor as the tree is read, batch by batch; the correlator keeps
only its per-process views, so a scan stays bounded in memory however large the tree.
"""

from __future__ import annotations

from collections.abc import Sequence

from npuwatch.correlation.correlator import Correlator
from npuwatch.correlation.incident import Incident
from npuwatch.parsers.hccl.extractor import CollectiveExtractor
from npuwatch.records import Record


class CollectiveScan:
    def __init__(self) -> None:
        self._extractor = CollectiveExtractor()
        self._correlator = Correlator()

    def add_batch(self, records: Sequence[Record], first_line: int) -> None:
        if records:
            self._correlator.add_all(self._extractor.feed(records, first_line))

    def incidents(self) -> list[Incident]:
        self._correlator.add_all(self._extractor.finish())
        return self._correlator.incidents()
