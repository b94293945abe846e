"""The baseline archive on disk: one folder of plain CSV and JSON per baseline.

    <archive>/baselines/<YYYY-MM-DD>_<model>_<scenario>/
        op_summary.csv       the operator table of all ranks together (OPERATOR_COLUMNS)
        ranks/<rank-N>.csv   the table of each rank, when the profile has several
        baseline.json        where it came from: source, versions, host, time, ranks, totals

Plain CSV, so that grep, rg and awk read it as well as npuwatch does. A baseline is written into
a hidden temporary folder next to its final place, synced, then renamed into place, so a reader
never sees half of one. This module knows files and names only (no pandas): `grep --baseline`
lists the archive through it and must start fast.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from npuwatch.default_paths import SYSTEM_ARCHIVE
from npuwatch.durable_files import sync_folder, write_synced
from npuwatch.parsers.table_numbers import usable_cell
from npuwatch.profiling.baseline.names import BaselineName, safe_part

SCHEMA_VERSION = 1
BASELINES = "baselines"
OPERATORS_FILE = "op_summary.csv"
OPERATORS_HEADER = "op_name,op_type,task_type,count,total_us,avg_us,min_us,max_us"
"""The header of op_summary.csv: parsers.profiling.OPERATOR_COLUMNS (a test holds them equal;
spelled out here so that listing the archive does not load pandas)."""
METADATA_FILE = "baseline.json"
RANKS_FOLDER = "ranks"
LATEST = "latest"
ENVIRONMENT_VARIABLE = "NPUWATCH_ARCHIVE"

ARCHIVE_RULE = (
    f"${ENVIRONMENT_VARIABLE}, else {SYSTEM_ARCHIVE} when it exists and you may write to it, "
    "else $XDG_DATA_HOME/npuwatch/archive (~/.local/share/npuwatch/archive)"
)
_LISTED = 10
"""How many names an error message lists before it says how many more there are."""


class BaselineExistsError(FileExistsError):
    """A baseline of that name is already stored (and --force was not given)."""


class UnknownBaselineError(LookupError):
    """A name that matches no stored baseline, or several; the message lists the candidates."""


def default_archive(
    environ: Mapping[str, str], *, home: Path | None = None, system: Path = SYSTEM_ARCHIVE
) -> Path:
    """The archive when --archive is not given (ARCHIVE_RULE)."""
    if environ.get(ENVIRONMENT_VARIABLE):
        return Path(environ[ENVIRONMENT_VARIABLE]).expanduser()
    if system.is_dir() and os.access(system, os.W_OK | os.X_OK):
        return system
    data = environ.get("XDG_DATA_HOME") or str((home or Path.home()) / ".local" / "share")
    return Path(data) / "npuwatch" / "archive"


@dataclass(frozen=True)
class BaselineInfo:
    """A stored baseline: its folder and what its baseline.json says (empty when unreadable)."""

    name: str
    path: Path
    metadata: Mapping[str, Any]
    problem: str | None = None
    """Why baseline.json could not be read; the name's parts are then all there is."""

    @property
    def operators_csv(self) -> Path:
        return self.path / OPERATORS_FILE

    def _text(self, key: str) -> str | None:
        value = self.metadata.get(key)
        return value if isinstance(value, str) else None

    def _number(self, key: str) -> float | None:
        value = self.metadata.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return usable_cell(value)  # an edited metadata file may hold 1e999 or 400 digits

    def _part(self, key: str) -> str:
        parsed = BaselineName.parse(self.name)
        return self._text(key) or (getattr(parsed, key) if parsed else "")

    @property
    def date(self) -> str:
        return self._part("date")

    @property
    def model(self) -> str:
        return self._part("model")

    @property
    def scenario(self) -> str:
        return self._part("scenario")

    @property
    def created_utc(self) -> str:
        return self._text("created_utc") or ""

    @property
    def source(self) -> str | None:
        return self._text("source")

    @property
    def layout(self) -> str | None:
        return self._text("layout")

    @property
    def cann_version(self) -> str | None:
        return self._text("cann_version")

    @property
    def torch_npu_version(self) -> str | None:
        return self._text("torch_npu_version")

    @property
    def operators(self) -> int | None:
        count = self._number("operators")
        return None if count is None else int(count)

    @property
    def total_us(self) -> float | None:
        return self._number("total_us")

    @property
    def rank_steps(self) -> int | None:
        steps = self._number("rank_steps")
        return None if steps is None else int(steps)

    @property
    def step_us(self) -> float | None:
        return self._number("step_us")

    @property
    def ranks(self) -> int | None:
        ranks = self.metadata.get("ranks")
        return len(ranks) if isinstance(ranks, list) else None


class Archive:
    """The baselines under one archive folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.folder = root / BASELINES

    def baselines(self) -> list[BaselineInfo]:
        """Every stored baseline, oldest date first (names begin with the date)."""
        if not self.folder.is_dir():
            return []
        found = []
        for path in sorted(self.folder.iterdir()):
            if path.name.startswith(".") or not (path / OPERATORS_FILE).is_file():
                continue  # a write in progress, or not a baseline
            found.append(read_info(path))
        return found

    def resolve(
        self, text: str, *, model: str | None = None, scenario: str | None = None
    ) -> BaselineInfo:
        """The baseline `text` names: a whole folder name, a unique prefix of one, or `latest`
        (the newest, of `model` and `scenario` when given)."""
        infos = self.baselines()
        if not infos:
            raise UnknownBaselineError(
                f"no baselines in {self.folder}: store one with `npuwatch baseline add PROF_DIR "
                "--model M --scenario S`, or give the archive with --archive DIR"
            )
        if text == LATEST:
            return _latest(infos, model, scenario)
        for info in infos:
            if info.name == text:
                return info
        matches = [info for info in infos if info.name.startswith(text)]
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise UnknownBaselineError(
                f"{text!r} begins {len(matches)} baseline names ({_names(matches)}): "
                "give more of the name"
            )
        raise UnknownBaselineError(
            f"no baseline {text!r} in {self.folder}; available: {_names(infos)}"
        )

    def store(
        self,
        name: BaselineName,
        files: Mapping[str, str],
        metadata: Mapping[str, Any],
        *,
        force: bool = False,
    ) -> Path:
        """Write a baseline atomically: `files` (relative path → text) and its baseline.json."""
        final = self.folder / name.folder
        if final.exists() and not force:
            raise BaselineExistsError(
                f"baseline {name.folder} exists in {self.folder}: add --force to replace it, "
                "or give another --date or --scenario"
            )
        document = {
            "schema_version": SCHEMA_VERSION,
            "name": name.folder,
            "date": name.date,
            "model": name.model,
            "scenario": name.scenario,
            **metadata,
        }
        contents = {**files, METADATA_FILE: json.dumps(document, indent=2) + "\n"}
        self.folder.mkdir(parents=True, exist_ok=True)
        temporary = self.folder / f".tmp-{name.folder}-{uuid.uuid4().hex[:12]}"
        try:
            temporary.mkdir()
            for relative, text in contents.items():
                write_synced(temporary / relative, text.encode())
            for folder in {(temporary / relative).parent for relative in contents}:
                sync_folder(folder)
            _swap_in(temporary, final)
            sync_folder(self.folder)
        finally:
            shutil.rmtree(temporary, ignore_errors=True)
        return final


def read_info(path: Path) -> BaselineInfo:
    """The baseline in `path`; an unreadable baseline.json is reported in `problem`, not raised."""
    try:
        document = json.loads((path / METADATA_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return BaselineInfo(path.name, path, {}, f"{path}: no {METADATA_FILE}")
    except (OSError, ValueError) as failure:
        return BaselineInfo(path.name, path, {}, f"{path / METADATA_FILE}: unreadable ({failure})")
    if not isinstance(document, dict):
        return BaselineInfo(path.name, path, {}, f"{path / METADATA_FILE}: not a JSON object")
    return BaselineInfo(path.name, path, document)


def _latest(infos: Sequence[BaselineInfo], model: str | None, scenario: str | None) -> BaselineInfo:
    wanted_model = safe_part(model, "--model") if model else None
    wanted_scenario = safe_part(scenario, "--scenario") if scenario else None
    candidates = [
        info
        for info in infos
        if wanted_model in (None, info.model) and wanted_scenario in (None, info.scenario)
    ]
    if not candidates:
        raise UnknownBaselineError(
            f"no baseline of model {wanted_model or 'any'} and scenario "
            f"{wanted_scenario or 'any'}; available: {_names(infos)}"
        )
    pairs = sorted({f"{info.model}_{info.scenario}" for info in candidates})
    if len(pairs) > 1:
        raise UnknownBaselineError(
            f"latest of which? The archive holds {len(pairs)} model/scenario pairs "
            f"({', '.join(pairs[:_LISTED])}): add --model and --scenario"
        )
    return max(candidates, key=lambda info: (info.date, info.created_utc, info.name))


def _names(infos: Sequence[BaselineInfo]) -> str:
    names = [info.name for info in infos]
    shown = ", ".join(names[:_LISTED])
    more = len(names) - _LISTED
    return f"{shown} and {more} more (npuwatch baseline list)" if more > 0 else shown


def _swap_in(temporary: Path, final: Path) -> None:
    """Rename `temporary` to `final`; an existing `final` is moved aside first, then removed."""
    if not final.exists():
        try:
            temporary.rename(final)
        except OSError as failure:  # another writer got there first (ENOTEMPTY, EEXIST)
            raise BaselineExistsError(
                f"baseline {final} appeared while writing: {failure}"
            ) from None
        return
    aside = final.with_name(f".old-{final.name}-{uuid.uuid4().hex[:12]}")
    final.rename(aside)
    temporary.rename(final)
    shutil.rmtree(aside, ignore_errors=True)
