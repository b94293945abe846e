"""`npuwatch scan` on any tree a user can leave: it ends, keeps its exit codes, prints its
report, and counts every regular log file once, with every line and record of it."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from npuwatch.commands.argument_types import LARGEST_CONTEXT
from npuwatch.parsers.stream import parse_bytes
from tests.conftest import utc_clock
from tests.fuzz.budget import fuzz_settings
from tests.fuzz.contract import assert_kept_the_contract, run_in_process
from tests.fuzz.log_trees import DEEP_FOLDERS, Entry, build_tree, entries, folder_paths, remove_tree

LINE = b"[ERROR] GE(1,p):2025-09-14-09:30:00.000.000 x\n"
SANITIZER_MARKER = b"[mssanitizer] printed by the training script\n"
"""A line that makes the whole file an msSanitizer report to `scan`: its records go uncounted."""
CONTEXTS = st.sampled_from([None, 0, 3, 2**31, 2**63, 10**30])


@fuzz_settings(60)
@given(
    folders=folder_paths,
    plan=st.lists(entries, max_size=8),
    context=CONTEXTS,
)
@example(folders=[], plan=[Entry("fifo", 0, "plog-1_20250914093300120.log")], context=None)
@example(folders=[], plan=[Entry("deep", 0, "x", LINE, DEEP_FOLDERS)], context=None)
@example(folders=[], plan=[Entry("link-to-file", 0, "train.log", LINE)], context=None)
@example(folders=[], plan=[Entry("file", 0, "train.log", LINE)], context=10**30)
@example(folders=[], plan=[Entry("file", 0, "train.log", b"2025-02-30 00:00 x\n")], context=None)
@example(folders=[], plan=[Entry("file", 0, "train.log", LINE + SANITIZER_MARKER)], context=None)
def test_scan_reads_every_regular_log_file_of_any_tree_once(
    folders: list[str],
    plan: list[Entry],
    context: int | None,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    base = tmp_path_factory.mktemp("scan")
    tree = build_tree(base, folders, plan)
    arguments = ["scan", str(tree.root), "--json", "--timezone", "UTC"]
    if context is not None:
        arguments += ["--context", str(context)]
    contents = {path: path.read_bytes() for path in tree.readable_logs}
    try:
        outcome = run_in_process(*arguments)
    finally:
        remove_tree(base)
    if context is not None and context > LARGEST_CONTEXT:  # a usage error, said in one line
        assert_kept_the_contract(outcome, codes=(2,))
        assert "argument --context" in outcome.stderr, outcome.describe()
        return
    # A FIFO, a link, an unreadable file is left out and said: exit 2 ("unreadable input").
    assert_kept_the_contract(outcome, codes=(0, 1, 2) if tree.special else (0, 1))
    report = json.loads(outcome.stdout)
    records = {
        path: parse_bytes(data, utc_clock(), path=str(path)) for path, data in contents.items()
    }
    assert report["files"] == len(contents), outcome.describe()
    assert report["bytes"] == sum(map(len, contents.values()))
    assert report["records"] == sum(map(len, records.values()))
    assert report["lines"] == sum(r.line_count for found in records.values() for r in found)


ODD_PATHS = ("fifo.log", "link-to-nothing.log", "loop.log", "folder-link", "", "missing.log")


@fuzz_settings(20)
@given(name=st.sampled_from(ODD_PATHS), json_output=st.booleans())
def test_scan_of_any_single_path_ends_with_a_documented_code(
    name: str, json_output: bool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    base = tmp_path_factory.mktemp("odd")
    os.mkfifo(base / "fifo.log")
    (base / "link-to-nothing.log").symlink_to(base / "gone.log")
    (base / "loop.log").symlink_to(base / "loop.log")
    (base / "folder").mkdir()
    (base / "folder" / "train.log").write_bytes(LINE)
    (base / "folder-link").symlink_to(base / "folder")
    target = str(base / name) if name else ""
    outcome = run_in_process("scan", target, *(["--json"] if json_output else []))
    assert_kept_the_contract(outcome)
    if name == "":
        assert outcome.code == 2, outcome.describe()  # not the default root, silently
