"""What reaches a terminal: control characters from logs shown as escapes (as journalctl shows
them), npuwatch's own colours kept on a terminal, and JSON and CSV output left exact."""

from __future__ import annotations

import argparse
import io
import os
import pty
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from npuwatch.cli import _build_parser, _prints_data
from npuwatch.terminal import Palette, VisibleStream, unescaped, visible, visible_line
from tests.journal.journal_builder import LogFile, write_journal
from tests.npuwatch_command import clean_environment

# --- visible ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain text, 中文, émigré, tab\there", "plain text, 中文, émigré, tab\there"),
        ("two\nlines", "two\nlines"),
        ("\x1b[2J", "\\x1b[2J"),
        ("\x1b]52;c;ZXZpbA==\x07", "\\x1b]52;c;ZXZpbA==\\a"),
        ("\x00\x08\x0b\x0c\r\x1f\x7f", "\\x00\\b\\v\\f\\r\\x1f\\x7f"),
        ("\x80\x9b\x9f", "\\x80\\x9b\\x9f"),
        ("\u202a\u202b\u202c\u202d\u202e", "\\u202a\\u202b\\u202c\\u202d\\u202e"),
        ("\u2066\u2067\u2068\u2069", "\\u2066\\u2067\\u2068\\u2069"),
        ("\u061c\u200e\u200f", "\\u061c\\u200e\\u200f"),
        ("\u2028\u2029", "\\u2028\\u2029"),
        ("\udc9b", "\\udc9b"),  # a byte that was no UTF-8, kept as a lone surrogate
    ],
)
def test_visible_shows_what_a_terminal_would_act_on_as_an_escape(text: str, shown: str) -> None:
    assert visible(text) == shown


def test_a_one_line_field_shows_its_newlines_too() -> None:
    assert visible_line("a file\nnamed:like a line") == "a file\\nnamed:like a line"
    assert visible_line("tab\tkept") == "tab\tkept"


def test_what_visible_shows_has_nothing_left_to_show() -> None:
    every = "".join(map(chr, range(0x2100))) + "\udc80"
    assert visible(visible(every)) == visible(every)
    assert re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", visible(every)) is None


# --- the stream every command writes to ------------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def colours(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("NO_COLOR", raising=False)
    yield


def test_a_stream_to_a_terminal_lets_through_only_the_palette_s_colours(colours: None) -> None:
    terminal = Terminal()
    stream = VisibleStream(terminal)

    stream.write(Palette(True).level("ERROR", "ERROR") + " \x1b[8mhidden\x1b[2J\x07\n")

    # What renders log text escapes it first (grep, scan, the console ...): this is the net
    # under them, which cannot tell a colour of the palette from the same bytes in a log.
    assert terminal.getvalue() == "\x1b[31mERROR\x1b[0m \\x1b[8mhidden\\x1b[2J\\a\n"


def test_a_stream_to_a_pipe_escapes_every_control_sequence() -> None:
    pipe = io.StringIO()

    VisibleStream(pipe).write("\x1b[31mred\x1b[0m\n")

    assert pipe.getvalue() == "\\x1b[31mred\\x1b[0m\n"


def test_output_that_must_stay_exact_is_written_under_the_stream() -> None:
    pipe = io.StringIO()
    stream = VisibleStream(pipe)

    unescaped(stream).write('{"text":"\x7f\u2028"}\n')  # type: ignore[arg-type]

    assert pipe.getvalue() == '{"text":"\x7f\u2028"}\n'


# --- which output is data --------------------------------------------------------------------


def every_action(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                for path, inner in every_action(child):
                    yield f"{name} {path}".strip(), inner
        else:
            yield "", action


def test_every_json_or_csv_output_of_every_command_is_known_to_be_data() -> None:
    found = []
    for command, action in every_action(_build_parser()):
        words = [*action.option_strings, *map(str, action.choices or ())]
        if not any("json" in word or "csv" in word for word in words):
            continue
        found.append(command)
        if action.choices:
            machine = {str(choice) for choice in action.choices} - {"table", "text"}
            for choice in machine:
                assert _prints_data(argparse.Namespace(**{action.dest: choice})), command
        else:
            assert _prints_data(argparse.Namespace(**{action.dest: True})), command
    assert len(found) >= 12  # grep, scan, parse, doctor, the summaries, rules, correlate ...


# --- on a real terminal ----------------------------------------------------------------------


def test_grep_on_a_terminal_colours_its_own_parts_and_shows_the_log_s_sequences(
    tmp_path: Path,
) -> None:
    line = (
        "[ERROR] HCCL(3300,python3):2025-09-14-09:30:02.402.855 [t.cc:1] [3301]"
        "timeout \x1b[2J\x1b]52;c;ZXZpbA==\x07\x1b[31m red from the log"
    )
    journal = tmp_path / "journal"
    write_journal(journal, [LogFile("/r/debug/plog/plog-3300_1.log", "node-7", [line])])
    environment = clean_environment()
    del environment["NO_COLOR"]
    leader, follower = pty.openpty()
    done = subprocess.run(
        [sys.executable, "-m", "npuwatch", "grep", "--journal", str(journal), "timeout"],
        stdout=follower,
        stderr=follower,
        env=environment,
        timeout=60,
        check=False,
    )
    os.close(follower)
    output = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
    os.close(leader)
    text = output.decode()

    assert done.returncode == 0
    sequences = set(re.findall("\x1b[^a-zA-Z]*[a-zA-Z]", text))
    assert sequences <= {"\x1b[2m", "\x1b[0m", "\x1b[1;31m"}  # dim file name, highlight
    assert "\x1b[1;31mtimeout\x1b[0m" in text
    assert "\\x1b[2J\\x1b]52;c;ZXZpbA==\\a\\x1b[31m red from the log" in text
