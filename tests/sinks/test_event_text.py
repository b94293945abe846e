"""An event's line in `grep --events` and the console: every part said, no bare dash."""

from __future__ import annotations

import json

from npuwatch.sinks.event_text import event_line


def test_a_rule_event_names_severity_rule_count_message_and_file() -> None:
    document = {
        "message": "HCCL notify wait timed out",
        "rule": {"id": "hccl.notify-wait-timeout"},
        "log": {"file": {"path": "/r/plog-1.log"}},
        "ascend": {"finding": {"severity": "error", "count": 2}},
    }
    assert event_line(json.dumps(document)) == (
        "EVENT error hccl.notify-wait-timeout x2 HCCL notify wait timed out (/r/plog-1.log)"
    )


def test_an_event_without_rule_or_file_says_what_and_where_in_words() -> None:
    """Before: `EVENT - - … (-)` for a collective-failure event."""
    collective = {
        "message": "notify wait timeout",
        "host": {"name": "host-a"},
        "process": {"pid": 3306},
        "ascend": {"collective": {"kind": "exec_timeout"}},
    }
    assert event_line(json.dumps(collective)) == (
        "EVENT collective exec_timeout notify wait timeout (host-a, pid 3306)"
    )
    assert event_line(json.dumps({"ascend": {}})) == "EVENT event (no file)"
    assert "-" not in event_line(json.dumps({"ascend": {"device": 3}, "host": {"name": "h"}}))
