"""The latest profiling figures of each device, kept in the state directory.

The ascend_op_* and ascend_profiling_* gauges show the latest imported run of each device. The
runs behind them are not read again after a restart (they were imported), so without this file
the gauges — and the dashboard's profiling panels — would stay empty until the next run arrives.
A full disk does not stop imports: the figures are written at the next import there is room for.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

from npuwatch.sinks.prometheus.profiling_metrics import OperatorTypeFigures, RunFigures
from npuwatch.state_file import StateFile

log = logging.getLogger(__name__)

_VERSION = 1


class SavedFigures:
    """One JSON file of RunFigures, written whole (atomically) at every import."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = StateFile(
            path, "shows the profiling gauges of the runs imported before the last write"
        )

    def load(self) -> list[RunFigures]:
        """The saved figures; none (and one warning) when the file is unreadable."""
        try:
            data = json.loads(self.path.read_bytes().decode("utf-8"))
            return [_figures(run) for run in data["runs"]]
        except FileNotFoundError:
            return []
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            log.warning(
                "%s is unreadable (%s): the profiling gauges stay empty until the next run is "
                "imported",
                self.path,
                type(error).__name__,
            )
            return []

    def save(self, runs: Sequence[RunFigures]) -> None:
        data = {"version": _VERSION, "runs": [_plain(run) for run in runs]}
        self._file.save(json.dumps(data, indent=1).encode("utf-8"))


def _plain(run: RunFigures) -> dict[str, object]:
    return {
        "device": run.device,
        "operator_types": [[t.op_type, t.count, t.total_s] for t in run.operator_types],
        "step_time_s": run.step_time_s,
        "aicore_ratio": run.aicore_ratio,
        "imported_at_s": run.imported_at_s,
    }


def _figures(data: dict[str, object]) -> RunFigures:
    types = data["operator_types"]
    if not isinstance(types, list):
        raise TypeError("operator_types is not a list")
    imported = _number(data["imported_at_s"])
    if imported is None:
        raise TypeError("imported_at_s is missing")
    return RunFigures(
        device=str(data["device"]),
        operator_types=[
            OperatorTypeFigures(str(name), int(count), float(total)) for name, count, total in types
        ],
        step_time_s=_number(data["step_time_s"]),
        aicore_ratio=_number(data["aicore_ratio"]),
        imported_at_s=imported,
    )


def _number(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise TypeError(f"{value!r} is not a number")
