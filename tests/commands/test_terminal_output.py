"""What log lines and file names carry to a terminal: every command's human output shows their
control characters as escapes (as journalctl does), so that none can clear the screen, write
the clipboard (OSC 52), ring, or hide text (a carriage return, a bidi override); JSON output
keeps the text exact. Each test runs the command as a user does, in a process of its own."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.agent.console_agent import RunningAgent
from tests.agent.harness import append, plog_path, wait_until
from tests.conftest import REPO
from tests.journal.journal_builder import LogFile, write_journal
from tests.npuwatch_command import clean_environment, run_npuwatch

HOSTILE = {
    "\x1b[2J": "\\x1b[2J",  # clears the screen
    "\x1b]52;c;ZWNobyBwd25lZA==\x07": "\\x1b]52;c;ZWNobyBwd25lZA==\\a",  # writes the clipboard
    "\x07": "\\a",  # rings
    "\x9b31m": "\\x9b31m",  # C1 CSI: a screen command in one character
    "\u202e": "\\u202e",  # right-to-left override: shows text backwards
    "\r": "\\r",  # returns to the line's start, to overwrite what came before
    "\x7f": "\\x7f",
    "\u2028": "\\u2028",  # a line separator some terminals break on
    "\u2066": "\\u2066",  # a bidi isolate
}
"""Each control sequence, and what human output shows in its place."""
ALL = "".join(HOSTILE)
SHOWN = "".join(HOSTILE.values())
ACTED_ON = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
"""What a terminal would act on (newline and tab are the only controls human output keeps)."""

ERROR_LINE = (
    "[ERROR] HCCL(3300,python3):2025-09-14-09:30:02.402.855 [task.cc:947] [3303]"
    f"notify wait timeout {ALL} error code E30009"
)
INFO_LINE = f"[INFO] GE(3300,python3):2025-09-14-09:30:01.000.000 [graph.cc:1] [3301]built {ALL}"
HOSTILE_FOLDER = f"logs{ALL}".replace("\r", "")  # a folder name: anything but / and NUL


def json_lines(text: str) -> list[dict[str, Any]]:
    """The documents of JSON lines (split at newlines only: a JSON string may hold U+2028,
    which str.splitlines() would split at)."""
    return [json.loads(line) for line in text.split("\n") if line]


def assert_shown_not_acted_on(text: str) -> None:
    assert ACTED_ON.search(text) is None, [m.group() for m in ACTED_ON.finditer(text)]
    assert SHOWN in text


# --- grep ------------------------------------------------------------------------------------


@pytest.fixture
def journal(tmp_path: Path) -> tuple[Path, str]:
    """A journal of one file, whose path and lines carry every control sequence."""
    path = f"/r/{HOSTILE_FOLDER}/debug/plog/plog-3300_20250914093000120.log"
    directory = tmp_path / "journal"
    write_journal(directory, [LogFile(path, "node-7", [INFO_LINE, ERROR_LINE])])
    return directory, path


def test_grep_shows_the_control_characters_of_lines_and_file_names(
    journal: tuple[Path, str],
) -> None:
    directory = journal[0]
    for question in (("built",), ("--level", "ERROR"), ("-C", "1", "timeout")):
        done = run_npuwatch("grep", "--journal", str(directory), *question)

        assert done.returncode == 0, done.stderr
        assert_shown_not_acted_on(done.stdout)
        assert done.stdout.count("\n") == len(done.stdout.splitlines())
        assert all(line.startswith("/r/logs\\x1b[2J") for line in done.stdout.splitlines())


def test_grep_events_show_the_control_characters_of_their_message(
    journal: tuple[Path, str],
) -> None:
    done = run_npuwatch("grep", "--journal", str(journal[0]), "--events")

    assert done.returncode == 0, done.stderr
    assert_shown_not_acted_on(done.stdout)


def test_grep_json_keeps_the_lines_and_file_names_exact(journal: tuple[Path, str]) -> None:
    directory, path = journal

    done = run_npuwatch("grep", "--journal", str(directory), "--json", "timeout|built")

    assert done.returncode == 0, done.stderr
    documents = json_lines(done.stdout)
    assert [d["event"]["original"] for d in documents] == [INFO_LINE, ERROR_LINE]
    assert {d["log"]["file"]["path"] for d in documents} == {path}


# --- parse and scan --------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A log tree in a folder whose name carries every control sequence, with one plog."""
    root = tmp_path / HOSTILE_FOLDER
    plog = plog_path(root, 3300)
    plog.write_text(f"{INFO_LINE}\n{ERROR_LINE}\n", encoding="utf-8")
    return root


def test_parse_as_a_table_shows_the_control_characters(tree: Path) -> None:
    done = run_npuwatch("parse", "--format", "table", str(plog_path(tree, 3300)))

    assert done.returncode == 0, done.stderr
    assert_shown_not_acted_on(done.stdout)


def test_parse_as_json_lines_keeps_the_text_exact(tree: Path) -> None:
    for output in ((), ("--format", "jsonl")):
        done = run_npuwatch("parse", *output, str(plog_path(tree, 3300)))

        assert done.returncode == 0, done.stderr
        documents = json_lines(done.stdout)
        assert [d["event"]["original"] for d in documents] == [INFO_LINE, ERROR_LINE]
        assert documents[0]["log"]["file"]["path"] == str(plog_path(tree, 3300))


def test_scan_shows_the_control_characters_of_lines_and_file_names(tree: Path) -> None:
    done = run_npuwatch("scan", str(tree), "--timezone", "UTC")

    assert done.returncode == 1, done.stderr  # an error record
    assert_shown_not_acted_on(done.stdout)
    assert f"npuwatch scan of {tree.parent}/logs\\x1b[2J" in done.stdout
    assert done.stderr == ""


def test_scan_json_keeps_the_text_exact(tree: Path) -> None:
    done = run_npuwatch("scan", str(tree), "--json", "--timezone", "UTC")

    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["root"] == str(tree)
    (first,) = report["first_errors"]
    assert first["original"] == ERROR_LINE


def test_a_collection_whose_host_names_carry_control_characters_shows_them_escaped(
    tmp_path: Path,
) -> None:
    collection = tmp_path / "collection"
    shutil.copytree(REPO / "fixtures" / "collective" / "first-error-not-timeout", collection)
    (collection / "host-b").rename(collection / f"host-b{ALL}".replace("\r", ""))

    done = run_npuwatch("scan", str(collection), "--no-rules", "--timezone", "UTC")

    assert done.returncode == 1, done.stderr
    assert ACTED_ON.search(done.stdout) is None
    assert "  root cause  host-b\\x1b[2J\\x1b]52;c;ZWNobyBwd25lZA==\\a" in done.stdout


# --- what a command says on stderr ------------------------------------------------------------


def test_an_error_line_shows_the_control_characters_of_a_file_name(tmp_path: Path) -> None:
    missing = tmp_path / f"missing{ALL}.log".replace("\r", "")
    for command in (("parse", str(missing)), ("scan", str(missing))):
        done = run_npuwatch(*command)

        assert done.returncode == 2
        assert ACTED_ON.search(done.stderr) is None
        assert "missing\\x1b[2J\\x1b]52;c;" in done.stderr
        assert len(done.stderr.splitlines()) == 1


def test_doctor_shows_the_control_characters_of_the_log_folder_s_name(tmp_path: Path) -> None:
    folder = tmp_path / HOSTILE_FOLDER
    folder.mkdir()
    environment = clean_environment(ASCEND_PROCESS_LOG_PATH=str(folder))

    shown = run_npuwatch("doctor", env=environment)
    stored = run_npuwatch("doctor", "--json", env=environment)

    assert ACTED_ON.search(shown.stdout + shown.stderr) is None
    assert f"{tmp_path}/logs\\x1b[2J" in shown.stdout
    checks = {check["key"]: check for check in json.loads(stored.stdout)["checks"]}
    assert checks["log.process_log_path"]["facts"]["value"] == str(folder)


# --- the agent's console ---------------------------------------------------------------------


def console_of(tmp_path: Path, *extra: str) -> tuple[list[str], str]:
    """What `agent --console` prints of a plog carrying every control sequence, and its log."""
    agent = RunningAgent(tmp_path, extra=extra)
    try:
        wait_until(lambda: any("following" in line for line in agent.logged()), 30)
        append(plog_path(agent.logs, 3300), [INFO_LINE, ERROR_LINE])
        wait_until(lambda: sum("E30009" in line for line in agent.printed()) >= 2, 30)
    finally:
        assert agent.stop() == 0
    return agent.stdout.read_text(encoding="utf-8").split("\n"), agent.logged_text()


def test_the_agent_s_console_shows_the_control_characters(tmp_path: Path) -> None:
    printed, logged = console_of(tmp_path)

    assert_shown_not_acted_on("\n".join(printed))
    assert ACTED_ON.search(logged) is None


def test_the_agent_s_json_console_keeps_the_text_exact(tmp_path: Path) -> None:
    printed, _ = console_of(tmp_path, "--json")

    documents = json_lines("\n".join(printed))
    originals = [d.get("event", {}).get("original") for d in documents]
    assert [text for text in originals if text is not None][:2] == [INFO_LINE, ERROR_LINE]
